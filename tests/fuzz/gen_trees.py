"""Well-formed random calls of build_draft_tree and verify_draft_tree: the tests' batches (tests/helpers/tree_cases.py:
every slot kind, EAGLE-2 candidates and arbitrary ones with ties, NaN and infinite scores, parents out of
order; trees deep and wide, REJECTION's trees drafted from q (sampled or one-hot, up to 127 children of a
node), end tokens and max_dec_len on the walk, padding rows) plus the layout's limits
(N = 128, C = 1024, K = 127) now and then, and outputs the caller hands in full of garbage."""

from __future__ import annotations

import numpy as np

from fastspec.core.schema import MAX_TREE_CANDIDATES, MAX_TREE_NODES
from tests.helpers.tree_cases import (
    eagle_candidates,
    random_build_case,
    random_verify_tree_case,
    redraft_from_q,
    widest_node_case,
)


def _garbage(rng: np.random.Generator, like: np.ndarray, dtype: str) -> np.ndarray:
    return rng.integers(-(2**31), 2**31, like.shape).astype(dtype)


def build_call(rng: np.random.Generator) -> tuple[dict, dict]:
    arrays, attrs = random_build_case(rng)
    if rng.random() < 0.01:  # the widest layout and the most candidates (the reference takes ~0.2 s a slot)
        b = int(rng.integers(1, 3))
        per_depth = MAX_TREE_CANDIDATES // 8
        arrays["candidate_tokens"], arrays["candidate_parents"], arrays["candidate_scores"] = eagle_candidates(
            rng, b, 8, per_depth
        )
        arrays["draft_tree_tokens"] = np.full((b, MAX_TREE_NODES), 3, np.int64)
        for name in ("seq_lens_this_time", "seq_lens_encoder", "seq_lens_decoder"):
            arrays[name] = np.resize(arrays[name], b)
        attrs = {"max_depth": int(rng.choice([8, MAX_TREE_NODES - 1]))}
    if rng.random() < 0.3:
        arrays["draft_tree_parents"] = _garbage(rng, arrays["draft_tree_tokens"], "int32")
        arrays["draft_tree_depths"] = _garbage(rng, arrays["draft_tree_tokens"], "int32")
    return arrays, attrs


def verify_tree_call(rng: np.random.Generator, strategy: str) -> tuple[dict, dict]:
    arrays, attrs = random_verify_tree_case(rng, strategy=strategy, bad_trees=rng.random() < 0.2)
    if strategy == "rejection" and rng.random() < 0.4:  # trees drafted from q: SpecInfer's tries go past the first
        arrays = redraft_from_q(rng, arrays, one_hot=rng.random() < 0.5)
    if strategy == "rejection" and rng.random() < 0.01:
        arrays, attrs = widest_node_case(rng)
    if strategy != "rejection" and rng.random() < 0.2:
        arrays["target_tokens"] = arrays["target_tokens"].reshape(-1, 1)  # [T, 1] is allowed
    # always handed in (garbage): a call the checked front end refuses for its trees is then launched unchecked
    # and judged by its outputs (tests/fuzz/check.py)
    arrays["accept_nodes"] = _garbage(rng, arrays["accept_tokens"], "int32")
    return arrays, attrs

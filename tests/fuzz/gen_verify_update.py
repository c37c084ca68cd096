"""Well-formed random calls of verify_draft_tokens (every strategy) and update_model_status.

The tests' batches (every slot kind, planted accepted drafts, end tokens, max_dec_len hit,
short row ranges, bad candidate rows, L nearly full) plus wider drafts (up to the XPU's
K = 127), up to 64 end tokens, REJECTION / BLOCK rows in float16 and bfloat16, and now and then a
batch large enough for the CPU kernels to thread.
"""

from __future__ import annotations

import numpy as np

from fastspec.core.schema import XPU_MAX_DRAFTS, XPU_MAX_END_TOKENS
from tests.helpers import rejection_cases
from tests.helpers.sampling_cases import to_bf16_bits
from tests.helpers.verify_update_cases import random_update_case, random_verify_case


def _k(rng: np.random.Generator) -> int | None:
    return int(rng.choice([15, 40, XPU_MAX_DRAFTS])) if rng.random() < 0.05 else None  # None: the tests' K


def _batch(rng: np.random.Generator) -> int | None:
    """Now and then a batch for the threaded path (with the tests' K: a slot's walk is Python in the reference)."""
    return int(rng.integers(4096, 4300)) if rng.random() < 0.001 else None


def _more_end_tokens(rng: np.random.Generator, arrays: dict) -> None:
    if rng.random() < 0.05:
        count = int(rng.integers(4, XPU_MAX_END_TOKENS + 1))
        arrays["end_tokens"] = np.concatenate([arrays["end_tokens"], rng.integers(-2, 60, count)]).astype(np.int64)


def verify_call(rng: np.random.Generator, strategy: str) -> tuple[dict, dict]:
    if strategy in ("rejection", "block"):
        return rejection_call(rng, strategy)
    batch = _batch(rng)
    arrays, attrs = random_verify_case(rng, strategy=strategy, batch=batch, k=None if batch else _k(rng))
    _more_end_tokens(rng, arrays)
    if strategy != "topp" and rng.random() < 0.2:
        arrays["target_tokens"] = arrays["target_tokens"].reshape(-1, 1)  # [T, 1] is allowed
    return arrays, attrs


def rejection_call(rng: np.random.Generator, strategy: str = "rejection") -> tuple[dict, dict]:
    big = rng.random() < 0.001  # batch x V >= 2^20: the threaded path
    arrays = rejection_cases.random_case(rng, batch=64 if big else None)
    if big:
        vocab = 1 << 14
        rows = len(arrays["target_probs"])
        arrays["target_probs"] = rejection_cases.random_rows(rng, rows, vocab, zero_fraction=0.3)
        arrays["draft_probs"] = rejection_cases.random_rows(rng, rows, vocab, zero_fraction=0.3)
    roll = rng.random()
    for name in ("target_probs", "draft_probs"):
        p = arrays[name]
        arrays[name] = p.astype(np.float16) if roll < 0.2 else to_bf16_bits(p) if roll < 0.4 else p
    _more_end_tokens(rng, arrays)
    arrays.update(target_tokens=None, candidate_ids=None, candidate_scores=None, candidate_lens=None)
    roll = rng.random()
    attrs = {"strategy": strategy, "accept_all": bool(roll < 0.1), "reject_all": bool(0.05 < roll < 0.2)}
    return arrays, attrs


def update_call(rng: np.random.Generator) -> tuple[dict, dict]:
    max_len = int(rng.choice([200, 3000])) if rng.random() < 0.05 else None
    batch = _batch(rng)
    arrays = random_update_case(rng, batch=batch, k=None if batch else _k(rng), max_model_len=max_len)
    _more_end_tokens(rng, arrays)
    arrays["has_running"] = rng.random(1) < 0.5 if rng.random() < 0.3 else None
    return arrays, {}

"""Method suffix in a tree step (docs/trees.md, docs/suffix.md "Trees"): each decode slot's tree is the cache's
tree draft for its request, node for node; eager and static steps are lossless against spec off for GREEDY,
TARGET_MATCH and REJECTION; the tree takes more tokens per step than the chain on text that branches."""

from __future__ import annotations

import numpy as np
import pytest

from fastspec.demo.models import ReplayModel
from fastspec.runtime.config import SpeculativeConfig
from fastspec.runtime.generation import generate
from fastspec.runtime.proposers import SuffixProposer
from fastspec.runtime.state import RequestParams

V, K, TOP_K, N, END = 64, 4, 2, 8, 0


def workload(count: int = 8, temperature: float = 1.0, seed: int = 3):
    """Outputs that recombine a few shared lines, so a line's end has several likely continuations."""
    rng = np.random.default_rng(seed)
    lines = [rng.integers(3, V, 3).tolist() for _ in range(5)]
    prompts, refs = [], {}
    for i in range(count):
        prompts.append(sum((lines[j] for j in rng.integers(0, 5, 3)), []) + [2])
        refs[i] = sum((lines[j] for j in rng.integers(0, 5, 14)), [])
    params = [RequestParams(seed=11 + i, max_dec_len=60, temperature=temperature, top_p=0.95) for i in range(count)]
    return prompts, refs, params


def config(strategy: str, tree: bool = True) -> SpeculativeConfig:
    return SpeculativeConfig.from_dict(
        {
            "method": "suffix",
            "num_speculative_tokens": K,
            "verify_strategy": strategy,
            "suffix": {"with_anchored_ngram": False, "min_token_prob": 0.05},
            "tree": {"enabled": tree, "top_k": TOP_K, "max_nodes": N},
        }
    )


def run(strategy: str, tree: bool | None, temperature: float, mode: str = "eager", proposer=None, on_step=None):
    prompts, refs, params = workload(temperature=temperature)
    spec = config(strategy, bool(tree)) if tree is not None else SpeculativeConfig.from_dict({})
    return generate(
        ReplayModel(refs, V, end_token=END, peak=0.8),
        prompts,
        spec,
        max_num_seqs=3,
        end_tokens=[END],
        params=params,
        step_mode=mode,
        proposer=proposer,
        on_step=on_step,
    )


class Recording(SuffixProposer):
    """Keeps the host's tree drafts of each step, to hold the state's trees against them."""

    def _draft_trees(self, keys, state):
        super()._draft_trees(keys, state)
        self.drafted = (keys.copy(), self.tree_buffers.tokens.numpy().copy(), self.tree_buffers.parents.numpy().copy())


def test_each_slots_tree_is_the_caches_tree_draft():
    spec = config("greedy")
    proposer = Recording.from_config(spec)
    checked = []

    def check(state):
        keys, tokens, parents = proposer.drafted
        nodes, tree_parents = state.draft_tree_tokens.numpy(), state.draft_tree_parents.numpy()
        for slot in np.flatnonzero(keys >= 0):
            n = 1 + int(
                (tree_parents[slot, 1:] >= 0).sum()
            )  # the built tree's nodes (the update moved seq_lens_this_time)
            assert n == 1 + int((tokens[slot] >= 0).sum())  # every drafted node is kept (nodes <= N - 1, depth <= K)
            assert nodes[slot, 1:n].tolist() == tokens[slot, : n - 1].tolist()
            assert tree_parents[slot, 1:n].tolist() == (parents[slot, : n - 1] + 1).tolist()  # in the order drafted
            checked.append(len(set(tree_parents[slot, 1:n].tolist())) < n - 1)  # a node with two children

    run("greedy", True, 0.0, proposer=proposer, on_step=check)
    assert len(checked) > 20 and sum(checked) > 5  # trees, not only chains


CASES = [
    (s, t, m) for s, t in (("greedy", 0.0), ("target_match", 1.0), ("rejection", 0.0)) for m in ("eager", "static")
]


@pytest.mark.parametrize("strategy, temperature, mode", CASES, ids=[f"{s}-{m}" for s, _, m in CASES])
def test_a_suffix_tree_emits_what_spec_off_emits_and_more_per_step(strategy, temperature, mode):
    """REJECTION needs draft probabilities, which a suffix chain lacks: its chain is verified GREEDY (at
    temperature 0 the same rule), the tree by REJECTION with one-hot drafts (first_child_one_hot)."""
    off = run(strategy, None, temperature)
    chain = run("greedy" if strategy == "rejection" else strategy, False, temperature)
    tree = run(strategy, True, temperature, mode)
    for a, b in zip(off.outputs, tree.outputs):
        np.testing.assert_array_equal(b, a)
    stats = tree.stats
    assert stats.generated_tokens == sum(len(o) for o in tree.outputs) == stats.accepted_tokens + stats.bonus_tokens
    assert stats.mean_accepted_length > chain.stats.mean_accepted_length and stats.steps <= chain.stats.steps
    if mode == "static":
        assert stats.program_builds == {"prepare": 1, "finish": 1}


def test_a_suffix_tree_step_refuses_what_it_cannot_draft():
    from fastspec.runtime.proposers import NgramProposer
    from fastspec.runtime.sampler import Sampler
    from fastspec.runtime.state import SpecState
    from fastspec.runtime.step import SpecStep

    state = SpecState(2, 32, K, [END], "cpu", num_tree_nodes=N)
    with pytest.raises(ValueError, match="a tree step drafts from the suffix cache alone"):
        SpecStep(
            state, Sampler(config("greedy")), SuffixProposer(K, ngram=NgramProposer(K, 3, anchored=True)), mode="eager"
        )
    proposer = SuffixProposer(K, tree_top_k=3)
    proposer.prepare(state)
    with pytest.raises(ValueError, match="drafts trees of top_k 3, the step asks for 2"):
        proposer.propose_tree(state, TOP_K)

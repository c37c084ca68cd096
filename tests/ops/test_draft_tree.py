"""build_draft_tree and verify_draft_tree (docs/trees.md) on the CPU against the reference; a chain given as a
tree verifies exactly as verify_draft_tokens; a tree accepts at least what its first chain accepts; bad trees
are named by the checked front ends and judged safely by the kernels of every backend."""

from __future__ import annotations

import numpy as np
import paddle
import pytest

import fastspec.arrays
import fastspec.ops as ops
from fastspec import reference as ref
from fastspec.core.errors import FastspecArgumentError
from fastspec.core.refusals import Refusal
from fastspec.core.refusals import error as refusal_error
from fastspec.core.schema import SCHEMAS
from fastspec.reference.rejection import rejection_accepts, rejection_residual
from tests.helpers import rejection_cases
from tests.helpers.tree_cases import (
    BUILD_NAMES,
    BUILD_OUTPUTS,
    VERIFY_TREE_NAMES,
    VERIFY_TREE_OUTPUTS,
    copies,
    eagle_candidates,
    off_first_child_steps,
    random_build_case,
    random_tree,
    random_verify_tree_case,
    redraft_from_q,
    widest_node_case,
)
from tests.helpers.verify_update_cases import VERIFY_NAMES, random_verify_case

BACKENDS = (None, "cuda_emulator", "xpu_emulator")


def assert_all_equal(names, actual, expected, context=""):
    for name, a, e in zip(names, actual, expected):
        np.testing.assert_array_equal(a, e, err_msg=f"{name} {context}")


def build(arrays: dict, attrs: dict, **options) -> tuple:
    c = copies(arrays)
    return tuple(fastspec.arrays.build_draft_tree(*(c[name] for name in BUILD_NAMES), **attrs, **options))


def verify_tree(arrays: dict, attrs: dict, **options) -> tuple:
    c = copies(arrays)
    return tuple(fastspec.arrays.verify_draft_tree(*(c[name] for name in VERIFY_TREE_NAMES), **attrs, **options))


def test_build_random_batches_match_the_reference():
    rng = np.random.default_rng(240)
    for case in range(300):
        arrays, attrs = random_build_case(rng)
        expected = ref.build_draft_tree(*(arrays[name] for name in BUILD_NAMES), **attrs)
        assert_all_equal(BUILD_OUTPUTS, build(arrays, attrs), expected, f"case {case}")


def test_verify_random_batches_match_the_reference():
    rng = np.random.default_rng(241)
    accepted = 0
    for case in range(300):
        arrays, attrs = random_verify_tree_case(rng)
        expected = ref.verify_draft_tree(*(arrays[name] for name in VERIFY_TREE_NAMES), **attrs)
        assert_all_equal(VERIFY_TREE_OUTPUTS, verify_tree(arrays, attrs), expected, f"case {case}")
        accepted += int((expected[1] > 1).sum())
    assert accepted > 100  # the cases do walk into their trees


def test_build_keeps_the_best_nodes_by_cumulative_score():
    """EAGLE-2's rule: with cumulative log-probabilities (a child never above its parent) the tree is the N - 1
    best candidates by score, and every node's parent and depth follow the candidates' layout."""
    rng = np.random.default_rng(242)
    for case in range(40):
        b, depth, k, n = 3, int(rng.integers(1, 5)), int(rng.integers(1, 5)), int(rng.integers(2, 12))
        tokens, parents, scores = eagle_candidates(rng, b, depth, k)
        tokens = np.tile(np.arange(depth * k, dtype=np.int64), (b, 1))  # token = candidate index: traceable
        arrays = {
            "candidate_tokens": tokens,
            "candidate_parents": parents,
            "candidate_scores": scores,
            "draft_tree_tokens": np.full((b, n), 7, np.int64),
            "seq_lens_this_time": np.ones(b, np.int32),
            "seq_lens_encoder": np.zeros(b, np.int32),
            "seq_lens_decoder": np.full(b, 5, np.int32),
        }
        tree_tokens, lens, tree_parents, depths = build(arrays, {"max_depth": depth})
        for s in range(b):
            picked = tree_tokens[s, 1 : lens[s]]
            best = np.sort(scores[s])[::-1][: n - 1]
            assert lens[s] == min(n, depth * k + 1)
            np.testing.assert_array_equal(np.sort(scores[s, picked])[::-1], best, err_msg=f"case {case}")
            for node in range(1, lens[s]):
                parent_candidate = parents[s, tree_tokens[s, node]]
                parent_node = tree_parents[s, node]
                assert 0 <= parent_node < node
                assert (parent_node == 0) == (parent_candidate < 0)
                if parent_candidate >= 0:
                    assert tree_tokens[s, parent_node] == parent_candidate
                assert depths[s, node] == depths[s, parent_node] + 1 == tree_tokens[s, node] // k + 1
            assert tree_tokens[s, 0] == 7 and (tree_tokens[s, lens[s] :] == -1).all()


def test_chain_as_tree_verifies_exactly_as_verify_draft_tokens():
    rng = np.random.default_rng(243)
    for case in range(300):
        strategy = ("greedy", "target_match")[case % 2]
        arrays, _ = random_verify_case(rng, strategy=strategy)
        cols = arrays["draft_tokens"].shape[1]
        arrays["seq_lens_this_time"] = np.minimum(arrays["seq_lens_this_time"], cols).astype(np.int32)
        arrays["reasoning_status"] = None
        chain = ref.verify_draft_tokens(*(arrays[name] for name in VERIFY_NAMES), strategy=strategy)
        c = copies(arrays)
        fastspec.arrays.verify_draft_tokens(*(c[name] for name in VERIFY_NAMES), strategy=strategy)
        assert_all_equal(("accept_tokens", "accept_num"), (c["accept_tokens"], c["accept_num"]), chain)
        tree = {
            **arrays,
            "draft_tree_tokens": arrays["draft_tokens"],
            "target_probs": None,
            "draft_probs": None,
            "draft_tree_parents": np.tile(np.arange(-1, cols - 1, dtype=np.int32), (len(arrays["seed"]), 1)),
        }
        for backend in BACKENDS[case % 3 : case % 3 + 1]:
            got = verify_tree(tree, {"strategy": strategy}, backend=backend)
            assert_all_equal(("accept_tokens", "accept_num"), got[:2], chain, f"case {case} {backend}")
            for s, count in enumerate(chain[1].reshape(-1)):
                np.testing.assert_array_equal(got[2][s], list(range(count)) + [-1] * (cols - count))


def test_a_tree_accepts_at_least_its_first_chain():
    """The same drafts: a chain (nodes 1..m) and the tree that adds branches after it; the target's rows of the
    chain's nodes are the same in both calls. The tree never accepts less, and accepts more on some slots."""
    rng = np.random.default_rng(244)
    longer, b, vocab = 0, 8, 4
    for case in range(60):
        k = int(rng.integers(1, 6))
        m = k  # a full-depth chain
        n = m + 1 + int(rng.integers(1, 8))
        chain_tokens = rng.integers(0, vocab, size=(b, m + 1)).astype(np.int64)
        tree_tokens = np.zeros((b, n), np.int64)
        tree_parents = np.full((b, n), -1, np.int32)
        tree_tokens[:, : m + 1] = chain_tokens
        tree_parents[:, 1 : m + 1] = np.arange(m)
        depth = np.zeros((b, n), np.int64)
        depth[:, : m + 1] = np.arange(m + 1)
        for s in range(b):
            for i in range(m + 1, n):
                shallow = np.flatnonzero(depth[s, :i] < k)
                tree_parents[s, i] = rng.choice(shallow)
                depth[s, i] = depth[s, tree_parents[s, i]] + 1
                tree_tokens[s, i] = rng.integers(0, vocab)
        targets = rng.integers(0, vocab, size=(b, n)).astype(np.int64)  # row i of a slot scores node i
        common = {
            "step_idx": np.zeros(b, np.int64),
            "stop_flags": np.zeros(b, bool),
            "is_block_step": np.zeros(b, bool),
            "seq_lens_encoder": np.zeros(b, np.int32),
            "max_dec_len": np.full(b, 1000, np.int64),
            "end_tokens": np.array([vocab + 1], np.int64),
        }
        chain = fastspec.arrays.verify_draft_tokens(
            np.full((b, k + 1), -1, np.int64),
            np.zeros(b, np.int32),
            chain_tokens,
            targets[:, : m + 1].reshape(-1),
            None,
            None,
            None,
            np.zeros(b, np.int64),
            common["step_idx"],
            common["stop_flags"],
            common["is_block_step"],
            common["seq_lens_encoder"],
            np.full(b, m + 1, np.int32),
            np.arange(0, b * (m + 1) + 1, m + 1, dtype=np.int32),
            None,
            common["max_dec_len"],
            common["end_tokens"],
            strategy="greedy",
        )
        tree = fastspec.arrays.verify_draft_tree(
            np.full((b, k + 1), -1, np.int64),
            np.zeros(b, np.int32),
            tree_tokens,
            tree_parents,
            targets.reshape(-1),
            seq_lens_this_time=np.full(b, n, np.int32),
            cu_seqlens_q_output=np.arange(0, b * n + 1, n, dtype=np.int32),
            strategy="greedy",
            **common,
        )
        assert (tree.accept_num >= chain.accept_num).all(), f"case {case}"
        longer += int((tree.accept_num > chain.accept_num).sum())
    assert longer > 0


BAD_TREES = [
    ("a parent after its child", [-1, 0, 3, 1], 4, "the parent 3 comes after its child"),
    ("a cycle", [-1, 0, 2, 1], 4, r"the parent is the node itself \(a cycle\)"),
    ("no parent", [-1, 0, -1, 1], 4, r"node 2 has no parent \(-1\)"),
    ("depth over K", [-1, 0, 1, 2], 4, "node 3 has depth 3, over K = 2"),
    ("N over the layout", [-1, 0, 0, 1], 5, "5 nodes .* do not fit the layout's N = 4 columns"),
]


def _bad_tree_call(parents: list[int], nodes: int) -> dict:
    b = 2  # slot 0 is a good tree; slot 1 the bad one
    rows = 4 + nodes
    return {
        "accept_tokens": np.full((b, 3), -1, np.int64),
        "accept_num": np.zeros(b, np.int32),
        "draft_tree_tokens": np.array([[4, 5, 6, 7], [4, 5, 6, 7]], np.int64),
        "draft_tree_parents": np.array([[-1, 0, 0, 2], parents], np.int32),
        "target_tokens": np.tile(np.array([6, 7, 7, 8, 5, 6, 7, 8, 9], np.int64), 2)[:rows],
        "seed": np.zeros(b, np.int64),
        "target_probs": None,
        "draft_probs": None,
        "step_idx": np.zeros(b, np.int64),
        "stop_flags": np.zeros(b, bool),
        "is_block_step": np.zeros(b, bool),
        "seq_lens_encoder": np.zeros(b, np.int32),
        "seq_lens_this_time": np.array([4, nodes], np.int32),
        "cu_seqlens_q_output": np.array([0, 4, rows], np.int32),
        "max_dec_len": np.full(b, 100, np.int64),
        "end_tokens": np.array([2], np.int64),
    }


@pytest.mark.parametrize("what, parents, nodes, message", BAD_TREES, ids=[t[0] for t in BAD_TREES])
def test_a_bad_tree_is_named(what, parents, nodes, message):
    arrays = _bad_tree_call(parents, nodes)
    pattern = f"verify_draft_tree: argument 'draft_tree_parents' of slot 1 is not a tree: .*{message}"
    with pytest.raises(FastspecArgumentError, match=pattern):
        ref.verify_draft_tree(*(arrays[name] for name in VERIFY_TREE_NAMES), strategy="greedy")
    for backend in BACKENDS:
        with pytest.raises(FastspecArgumentError, match=pattern):
            verify_tree(arrays, {"strategy": "greedy"}, backend=backend)
    # the kernels (a launch without the value checks, as a CUDA stream runs it): the slot judges no drafts
    expected = ref.verify_draft_tree(*(arrays[name] for name in VERIFY_TREE_NAMES), strategy="greedy", check=False)
    assert expected[1][1] == 1 and expected[2][1][0] == 0
    for backend in BACKENDS:
        c = copies(arrays)
        fastspec.arrays.prepare(
            "verify_draft_tree", *(c[name] for name in VERIFY_TREE_NAMES), strategy="greedy", backend=backend
        )()
        assert_all_equal(VERIFY_TREE_OUTPUTS[:2], (c["accept_tokens"], c["accept_num"]), expected[:2], str(backend))


def test_random_bad_trees_are_judged_alike_by_every_kernel():
    rng = np.random.default_rng(245)
    for case in range(60):
        arrays, attrs = random_verify_tree_case(rng, bad_trees=True)
        expected = ref.verify_draft_tree(*(arrays[name] for name in VERIFY_TREE_NAMES), **attrs, check=False)
        backend = BACKENDS[case % 3]
        c = copies(arrays)
        c["accept_nodes"] = np.zeros_like(c["accept_tokens"], dtype=np.int32)
        fastspec.arrays.prepare(
            "verify_draft_tree", *(c[name] for name in VERIFY_TREE_NAMES), c["accept_nodes"], **attrs, backend=backend
        )()
        assert_all_equal(
            VERIFY_TREE_OUTPUTS, [c[name] for name in VERIFY_TREE_OUTPUTS], expected, f"case {case} {backend}"
        )


def test_the_bindings_judge_trees_as_the_reference():
    """The array API's tree check runs in the bindings (fastspec::tree_fault over every decode slot); it
    must refuse exactly the calls whose trees the reference's check_draft_trees names, in its words."""
    rng = np.random.default_rng(250)
    verdicts = set()
    for _ in range(300):
        arrays, _ = random_verify_tree_case(rng, bad_trees=True)
        parents, lens, enc = arrays["draft_tree_parents"], arrays["seq_lens_this_time"], arrays["seq_lens_encoder"]
        k = arrays["accept_tokens"].shape[1] - 1
        try:
            ref.check_draft_trees("verify_draft_tree", parents, lens, enc, max_depth=k)
            expected, words = True, None
        except FastspecArgumentError as error:
            expected, words = False, str(error)
        fault = fastspec.arrays.module().draft_tree_fault(parents, lens, enc, k)
        assert (fault is None) == expected
        if fault is not None:  # the bindings' record, worded, says what the reference says
            op = SCHEMAS["verify_draft_tree"]
            assert str(refusal_error(op, Refusal("tree", "draft_tree_parents", facts=fault))) == words
        verdicts.add(expected)
    assert verdicts == {True, False}


def test_build_then_verify_follows_the_target_down_the_tree():
    """A built tree verified against targets that name, at each node, the token of its best child: every
    accepted token is the best path's, and the accepted nodes are that path."""
    rng = np.random.default_rng(246)
    b, depth, k, n = 4, 3, 3, 8
    _, parents, scores = eagle_candidates(rng, b, depth, k)
    tokens = np.tile(np.arange(depth * k, dtype=np.int64), (b, 1)) + 10
    tree = fastspec.arrays.build_draft_tree(
        tokens,
        parents,
        scores,
        np.full((b, n), 3, np.int64),
        np.ones(b, np.int32),
        np.zeros(b, np.int32),
        np.full(b, 5, np.int32),
        max_depth=depth,
    )
    targets = np.full((b, n), 1, np.int64)  # a leaf's row: token 1, off the tree
    for s in range(b):
        for node in range(n):
            children = np.flatnonzero(tree.draft_tree_parents[s] == node)
            if len(children):
                targets[s, node] = tree.draft_tree_tokens[s, children[-1]]  # the last child: not the first match
    result = fastspec.arrays.verify_draft_tree(
        np.full((b, depth + 1), -1, np.int64),
        np.zeros(b, np.int32),
        tree.draft_tree_tokens,
        tree.draft_tree_parents,
        targets.reshape(-1),
        step_idx=np.zeros(b, np.int64),
        stop_flags=np.zeros(b, bool),
        is_block_step=np.zeros(b, bool),
        seq_lens_encoder=np.zeros(b, np.int32),
        seq_lens_this_time=tree.seq_lens_this_time,
        cu_seqlens_q_output=np.arange(0, b * n + 1, n, dtype=np.int32),
        max_dec_len=np.full(b, 100, np.int64),
        end_tokens=np.array([0], np.int64),
        strategy="target_match",
    )
    for s in range(b):
        path, node = [0], 0
        while (children := np.flatnonzero(tree.draft_tree_parents[s] == node)).size:
            node = int(children[-1])
            path.append(node)
        count = int(result.accept_num[s])
        assert count == len(path)
        np.testing.assert_array_equal(result.accept_nodes[s, :count], path)
        np.testing.assert_array_equal(result.accept_tokens[s, : count - 1], tree.draft_tree_tokens[s, path[1:]])
        assert result.accept_tokens[s, count - 1] == 1


def test_paddle_ops_match_the_reference():
    rng = np.random.default_rng(247)
    for case in range(10):
        arrays, attrs = random_build_case(rng)
        expected = ref.build_draft_tree(*(arrays[name] for name in BUILD_NAMES), **attrs)
        result = ops.build_draft_tree(*(paddle.to_tensor(arrays[name]) for name in BUILD_NAMES), **attrs)
        assert_all_equal(BUILD_OUTPUTS, [r.numpy() for r in result], expected, f"case {case}")
        arrays, attrs = random_verify_tree_case(rng)
        expected = ref.verify_draft_tree(*(arrays[name] for name in VERIFY_TREE_NAMES), **attrs)
        tensors = (None if arrays[name] is None else paddle.to_tensor(arrays[name]) for name in VERIFY_TREE_NAMES)
        result = ops.verify_draft_tree(*tensors, **attrs)
        assert_all_equal(VERIFY_TREE_OUTPUTS, [r.numpy() for r in result], expected, f"case {case}")


def test_random_tree_helper_keeps_depth_and_order():
    rng = np.random.default_rng(248)
    for _ in range(20):
        nodes, k = int(rng.integers(1, 20)), int(rng.integers(1, 5))
        _, parents = random_tree(rng, nodes, k, 5)
        assert ref.trees.tree_error(parents, nodes, k) is None


def _chain_parents(batch: int, cols: int) -> np.ndarray:
    return np.tile(np.arange(-1, cols - 1, dtype=np.int32), (batch, 1))


def test_chain_as_tree_rejection_is_verify_draft_tokens_rejection():
    rng = np.random.default_rng(249)
    for case in range(200):
        arrays = rejection_cases.random_case(rng)
        cols = arrays["draft_tokens"].shape[1]
        arrays["seq_lens_this_time"] = np.minimum(arrays["seq_lens_this_time"], cols).astype(np.int32)
        arrays["reasoning_status"] = None
        chain = ref.verify_rejection(*(arrays[name] for name in rejection_cases.ARRAY_NAMES))
        tree = {
            **arrays,
            "draft_tree_tokens": arrays["draft_tokens"],
            "target_tokens": None,
            "draft_tree_parents": _chain_parents(len(arrays["seed"]), cols),
        }
        expected = ref.verify_draft_tree(*(tree[name] for name in VERIFY_TREE_NAMES), strategy="rejection")
        assert_all_equal(("accept_tokens", "accept_num"), expected[:2], chain, f"case {case}")
        backend = BACKENDS[case % 3]
        got = verify_tree(tree, {"strategy": "rejection"}, backend=backend)
        assert_all_equal(VERIFY_TREE_OUTPUTS, got, expected, f"case {case} {backend}")


@pytest.mark.parametrize("one_hot", [False, True], ids=["sampled", "one_hot"])
def test_rejection_on_drafted_trees_matches_the_reference_on_every_backend(one_hot):
    """Trees whose children were drawn from their node's q (several tries per node, repeated tokens), or whose
    q is one-hot on the first child (the later children are never tried with a coin): bit for bit everywhere,
    and some accepted paths go through a child other than the first."""
    rng = np.random.default_rng(252 + one_hot)
    off_first = 0
    for case in range(200):
        arrays, attrs = random_verify_tree_case(rng, strategy="rejection")
        arrays = redraft_from_q(rng, arrays, one_hot=one_hot)
        expected = ref.verify_draft_tree(*(arrays[name] for name in VERIFY_TREE_NAMES), **attrs)
        for backend in BACKENDS:
            assert_all_equal(
                VERIFY_TREE_OUTPUTS, verify_tree(arrays, attrs, backend=backend), expected, f"case {case} {backend}"
            )
        off_first += off_first_child_steps(expected[2], arrays["draft_tree_parents"])
    assert off_first >= 5


def test_rejection_tries_every_child_of_the_widest_node():
    """127 children of one node, most or all of them rejected: bit for bit on every backend."""
    rng = np.random.default_rng(254)
    for case in range(6):
        arrays, attrs = widest_node_case(rng)
        expected = ref.verify_draft_tree(*(arrays[name] for name in VERIFY_TREE_NAMES), **attrs)
        for backend in BACKENDS:
            assert_all_equal(
                VERIFY_TREE_OUTPUTS, verify_tree(arrays, attrs, backend=backend), expected, f"case {case} {backend}"
            )


def _sampled_trees(
    rng: np.random.Generator, slots: int, p1: np.ndarray, q1: np.ndarray, p2: np.ndarray, q2: np.ndarray, width: int
) -> dict:
    """Per slot: node 0, ``width`` children drawn i.i.d. from q1, and under each child c ``width`` children
    drawn i.i.d. from q2[token of c]. Rows: node 0 holds (p1, q1), a child with token x holds (p2[x], q2[x])."""
    vocab = len(p1)
    n = 1 + width + width * width
    parents = np.full(n, -1, np.int32)
    parents[1 : 1 + width] = 0
    parents[1 + width :] = np.repeat(np.arange(1, 1 + width), width)
    tokens = np.zeros((slots, n), np.int64)
    tokens[:, 1 : 1 + width] = rng.choice(vocab, size=(slots, width), p=q1)
    for c in range(1, 1 + width):
        for x in range(vocab):
            mine = tokens[:, c] == x
            kids = slice(1 + width + (c - 1) * width, 1 + width + c * width)
            tokens[mine, kids] = rng.choice(vocab, size=(int(mine.sum()), width), p=q2[x])
    p_rows = np.zeros((slots, n, vocab), np.float32)
    q_rows = np.zeros((slots, n, vocab), np.float32)
    p_rows[:, 0], q_rows[:, 0] = p1, q1
    p_rows[:, 1:], q_rows[:, 1:] = p2[tokens[:, 1:]], q2[tokens[:, 1:]]  # leaves' rows: only their p is read
    return {
        "accept_tokens": np.zeros((slots, 3), np.int64),
        "accept_num": np.zeros(slots, np.int32),
        "draft_tree_tokens": tokens,
        "draft_tree_parents": np.tile(parents, (slots, 1)),
        "target_tokens": None,
        "seed": np.arange(slots, dtype=np.int64) * 7919 + 5,
        "step_idx": (np.arange(slots) % 613).astype(np.int64),
        "stop_flags": np.zeros(slots, bool),
        "is_block_step": np.zeros(slots, bool),
        "seq_lens_encoder": np.zeros(slots, np.int32),
        "seq_lens_this_time": np.full(slots, n, np.int32),
        "cu_seqlens_q_output": np.arange(0, slots * n + 1, n, dtype=np.int32),
        "max_dec_len": np.full(slots, 10**6, np.int64),
        "end_tokens": np.array([vocab + 7], np.int64),
        "target_probs": p_rows.reshape(-1, vocab),
        "draft_probs": q_rows.reshape(-1, vocab),
    }


def _first_child_rule_lengths(arrays: dict) -> np.ndarray:
    """Accepted lengths under the rule before SpecInfer's: only a node's first child is judged (the chain's
    test), and after its rejection the walk follows a later sibling carrying the residual draw."""
    p, q, tokens, parents = (
        arrays[name] for name in ("target_probs", "draft_probs", "draft_tree_tokens", "draft_tree_parents")
    )
    lengths = np.zeros(len(tokens), np.int64)
    for s in range(len(tokens)):
        node, position, seed = 0, int(arrays["step_idx"][s]), int(arrays["seed"][s])
        while node >= 0:
            lengths[s] += 1
            children = [c for c in range(node + 1, tokens.shape[1]) if parents[s, c] == node]
            row = int(arrays["cu_seqlens_q_output"][s]) + node
            if not children:
                break
            if rejection_accepts(p[row], q[row], int(tokens[s, children[0]]), seed, position):
                node = children[0]
            else:
                drawn = rejection_residual(p[row], q[row], seed, position)
                node = next((c for c in children[1:] if tokens[s, c] == drawn), -1)
            position += 1
    return lengths


@pytest.mark.parametrize("width", [2, 4])
def test_tree_rejection_follows_the_target_distribution(width):
    """Sampled trees (``width`` i.i.d. children per node, depth 2): the first token follows p1, and the second,
    given the first is x, follows p2[x]. The same drafts as a chain (the first children) never accept more,
    and accept less in expectation; so does the rule that judges only first children."""
    rng = np.random.default_rng(250 + width)
    vocab, slots = 5, 30000
    p1, q1 = rng.dirichlet(np.ones(vocab)), rng.dirichlet(np.ones(vocab))
    p2, q2 = rng.dirichlet(np.ones(vocab), size=vocab), rng.dirichlet(np.ones(vocab), size=vocab)
    p1[3] = 0.0  # a token the target never emits
    p1 /= p1.sum()
    arrays = _sampled_trees(rng, slots, p1, q1, p2, q2, width=width)
    tree = _follows_the_target(arrays, p1, p2)
    as_chain = _as_first_chain(arrays, width)
    assert (tree.accept_num >= as_chain.accept_num).all()
    assert tree.accept_num.mean() > as_chain.accept_num.mean()
    first_child_rule = _first_child_rule_lengths(arrays)
    assert tree.accept_num.mean() > first_child_rule.mean() >= as_chain.accept_num.mean()


def test_tree_rejection_on_top_k_trees_follows_the_target_distribution():
    """Deterministic trees (a node's children: the 3 likeliest tokens under q, its row one-hot on the first,
    as the runner drafts them): the emitted tokens follow p on two levels, never fewer than the chain's."""
    rng = np.random.default_rng(255)
    vocab, slots, width = 5, 30000, 3
    p1, q1 = rng.dirichlet(np.ones(vocab)), rng.dirichlet(np.ones(vocab))
    p2, q2 = rng.dirichlet(np.ones(vocab), size=vocab), rng.dirichlet(np.ones(vocab), size=vocab)
    arrays = _sampled_trees(rng, slots, p1, q1, p2, q2, width=width)
    tokens = arrays["draft_tree_tokens"]
    tokens[:, 1 : 1 + width] = np.argsort(-q1)[:width]
    for c in range(1, 1 + width):
        kids = slice(1 + width + (c - 1) * width, 1 + width + c * width)
        tokens[:, kids] = np.argsort(-q2[tokens[0, c]])[:width]
    arrays["target_probs"] = np.tile(np.concatenate([[p1], p2[tokens[0, 1:]]]).astype(np.float32), (slots, 1))
    arrays = redraft_from_q(rng, arrays, one_hot=True)
    tree = _follows_the_target(arrays, p1, p2)
    as_chain = _as_first_chain(arrays, width)
    assert (tree.accept_num >= as_chain.accept_num).all()
    assert tree.accept_num.mean() > as_chain.accept_num.mean()


def _follows_the_target(arrays: dict, p1: np.ndarray, p2: np.ndarray):
    """Verifies the depth-2 trees; asserts the first token follows p1 and the second, given the first is x,
    p2[x] (chi-square at 1e-4)."""
    vocab, slots = len(p1), len(arrays["seed"])
    tree = fastspec.arrays.verify_draft_tree(*(arrays[name] for name in VERIFY_TREE_NAMES), strategy="rejection")
    first = tree.accept_tokens[:, 0]
    fits, stat, crit = rejection_cases.chi2_matches(np.bincount(first, minlength=vocab), p1.astype(np.float32))
    assert fits, f"first token: chi2 {stat:.1f} > {crit:.1f}"
    moved = tree.accept_num >= 2
    assert moved.sum() > slots // 5  # the walk often goes on past the first token
    for x in range(vocab):
        given = moved & (first == x)
        if given.sum() < 200:
            continue
        counts = np.bincount(tree.accept_tokens[given, 1], minlength=vocab)
        fits, stat, crit = rejection_cases.chi2_matches(counts, p2[x].astype(np.float32))
        assert fits, f"second token after {x}: chi2 {stat:.1f} > {crit:.1f}"
    return tree


def _as_first_chain(arrays: dict, width: int):
    """The same drafts and rows as a chain of first children, verified."""
    slots = len(arrays["seed"])
    chain_cols, path = 3, [0, 1, 1 + width]  # node 0, its first child, that child's first child
    chain = {
        **arrays,
        "draft_tree_tokens": arrays["draft_tree_tokens"][:, path].copy(),
        "draft_tree_parents": _chain_parents(slots, chain_cols),
        "seq_lens_this_time": np.full(slots, chain_cols, np.int32),
        "accept_tokens": np.zeros((slots, 3), np.int64),
        "accept_num": np.zeros(slots, np.int32),
    }
    n = arrays["draft_tree_tokens"].shape[1]
    rows = np.arange(slots)[:, None] * n + np.array(path)
    chain["target_probs"] = arrays["target_probs"][rows.reshape(-1)]
    chain["draft_probs"] = arrays["draft_probs"][rows.reshape(-1)]
    chain["cu_seqlens_q_output"] = np.arange(0, slots * chain_cols + 1, chain_cols, dtype=np.int32)
    return fastspec.arrays.verify_draft_tree(*(chain[name] for name in VERIFY_TREE_NAMES), strategy="rejection")

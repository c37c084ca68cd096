"""Random calls of build_draft_tree and verify_draft_tree (docs/trees.md) that every backend's tests share:
every slot kind, ties, NaN and infinite scores, candidates whose parent is not before them, deep and wide
trees, end tokens and ``max_dec_len`` on the walk, negative targets, padding rows."""

from __future__ import annotations

import numpy as np

from fastspec.core.schema import SCHEMAS

BUILD_NAMES = SCHEMAS["build_draft_tree"].input_names
VERIFY_TREE_NAMES = SCHEMAS["verify_draft_tree"].input_names
BUILD_OUTPUTS = ("draft_tree_tokens", "seq_lens_this_time", "draft_tree_parents", "draft_tree_depths")
VERIFY_TREE_OUTPUTS = ("accept_tokens", "accept_num", "accept_nodes")


def _slot_kinds(rng: np.random.Generator, b: int) -> tuple[np.ndarray, np.ndarray]:
    """(seq_lens_encoder, seq_lens_decoder): mostly decode slots, some prefill and inactive ones."""
    kind = rng.choice(3, size=b, p=[0.75, 0.15, 0.1])  # decode, prefill, inactive
    enc = np.where(kind == 1, rng.integers(1, 9, size=b), 0).astype(np.int32)
    dec = np.where(kind == 0, rng.integers(1, 99, size=b), np.where(kind == 1, rng.integers(0, 5, size=b), 0))
    return enc, dec.astype(np.int32)


def eagle_candidates(rng: np.random.Generator, b: int, depth: int, k: int) -> tuple[np.ndarray, ...]:
    """EAGLE-2's layout: ``k`` candidates per depth, each continuing one of the previous depth's ``k``,
    with cumulative log-probabilities (so a child never scores above its parent)."""
    count = depth * k
    tokens = rng.integers(0, 50, size=(b, count)).astype(np.int64)
    parents = np.full((b, count), -1, np.int32)
    scores = np.zeros((b, count), np.float32)
    for d in range(depth):
        block = slice(d * k, (d + 1) * k)
        if d > 0:
            parents[:, block] = (d - 1) * k + rng.integers(0, k, size=(b, k))
        step = np.log(rng.dirichlet(np.ones(k), size=b)).astype(np.float32)
        base = np.take_along_axis(scores, np.maximum(parents[:, block], 0), axis=1) if d > 0 else 0
        scores[:, block] = (base + step).astype(np.float32)
    return tokens, parents, scores


def random_build_case(rng: np.random.Generator) -> tuple[dict, dict]:
    b = int(rng.integers(1, 7))
    n = int(rng.choice([1, 2, 4, 9, 16]))
    if rng.random() < 0.4:
        depth, k = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        tokens, parents, scores = eagle_candidates(rng, b, depth, k)
    else:
        count = int(rng.integers(1, 25))
        tokens = rng.integers(-1, 8, size=(b, count)).astype(np.int64)
        index = np.arange(count)
        parents = (rng.integers(-1, count, size=(b, count)) % np.maximum(index, 1) - (index == 0)).astype(np.int32)
        parents[rng.random((b, count)) < 0.3] = -1
        odd = rng.random((b, count)) < 0.05  # a parent that is not before its candidate, or below -1
        parents[odd] = rng.choice([-3, -2, count, count + 5], size=int(odd.sum()))
        parents[:, 0][parents[:, 0] >= 0] = -1
        scores = (np.round(rng.normal(0, 1, size=(b, count)) * 4) / 4).astype(np.float32)  # many ties
        special = rng.random((b, count))
        scores[special < 0.05] = np.nan
        scores[(special >= 0.05) & (special < 0.08)] = np.inf
        scores[(special >= 0.08) & (special < 0.11)] = -np.inf
        scores[(special >= 0.11) & (special < 0.13)] = -0.0
    enc, dec = _slot_kinds(rng, b)
    arrays = {
        "candidate_tokens": tokens,
        "candidate_parents": parents,
        "candidate_scores": scores,
        "draft_tree_tokens": rng.integers(-1, 50, size=(b, n)).astype(np.int64),
        "seq_lens_this_time": rng.integers(0, 5, size=b).astype(np.int32),
        "seq_lens_encoder": enc,
        "seq_lens_decoder": dec,
    }
    return arrays, {"max_depth": int(rng.integers(1, 6))}


def random_tree(rng: np.random.Generator, nodes: int, k: int, vocab: int) -> tuple[np.ndarray, np.ndarray]:
    """(tokens, parents) of a random tree of ``nodes`` nodes and depth at most ``k`` (node 0 the root)."""
    parents = np.full(nodes, -1, np.int32)
    depth = np.zeros(nodes, np.int64)
    for i in range(1, nodes):
        shallow = np.flatnonzero(depth[:i] < k)
        parents[i] = rng.choice(shallow) if rng.random() < 0.6 else shallow[-1]  # bushy, or deep
        depth[i] = depth[parents[i]] + 1
    tokens = rng.integers(0, vocab, size=nodes).astype(np.int64)
    return tokens, parents


def _probs(rng: np.random.Generator, rows: int, vocab: int, peaked: np.ndarray) -> np.ndarray:
    """Random distributions; row ``r`` puts most of its mass on ``peaked[r]`` (when >= 0), so drafts are
    often accepted; a few rows hold invalid entries or no mass at all."""
    logits = rng.normal(0, 1.5, size=(rows, vocab))
    has = peaked >= 0
    logits[np.flatnonzero(has), peaked[has]] += 3.0
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs = (probs / probs.sum(axis=1, keepdims=True)).astype(np.float32)
    special = rng.random(rows)
    probs[special < 0.03] = 0.0
    probs[(special >= 0.03) & (special < 0.06), 0] = np.nan
    return probs


def random_verify_tree_case(
    rng: np.random.Generator, *, bad_trees: bool = False, strategy: str | None = None
) -> tuple[dict, dict]:
    """A verify_draft_tree batch; ``bad_trees``: some decode slots' parents are malformed (the kernels judge
    no drafts there; the checked front ends refuse the call)."""
    strategy = strategy or str(rng.choice(["greedy", "target_match", "GREEDY", "rejection"]))
    b = int(rng.integers(1, 9))
    k = int(rng.choice([0, 1, 2, 4, 7]))
    n = int(rng.choice([1, 2, 5, 8, 16]))
    vocab = int(rng.choice([3, 6, 40]))
    enc, _ = _slot_kinds(rng, b)
    kind = rng.random(b)
    this_time = np.where(enc > 0, enc, 0).astype(np.int32)
    tree_tokens = rng.integers(-1, vocab, size=(b, n)).astype(np.int64)
    tree_parents = rng.integers(-1, n, size=(b, n)).astype(np.int32)  # garbage past the node count
    targets, cu = [], [0]
    for s in range(b):
        if enc[s] == 0 and kind[s] > 0.1:
            nodes = int(rng.integers(1, min(n, 1 + 3 * max(k, 0)) + 1)) if k > 0 else 1
            tokens, parents = random_tree(rng, nodes, k, vocab)
            tree_tokens[s, :nodes], tree_parents[s, :nodes] = tokens, parents
            this_time[s] = nodes
            if bad_trees and nodes > 1 and rng.random() < 0.5:
                i = int(rng.integers(1, nodes))
                tree_parents[s, i] = rng.choice([-1, i, nodes - 1 if nodes - 1 >= i else i, 1000])
            if bad_trees and rng.random() < 0.1:
                this_time[s] = n + 1  # more nodes than the layout holds
        rows = int(this_time[s]) if enc[s] == 0 else 1
        rows += int(rng.integers(0, 2)) if rng.random() < 0.2 else 0
        rows -= 1 if rng.random() < 0.05 and rows > 0 else 0  # too few rows: the slot emits nothing
        # targets that follow the tree half of the time
        for i in range(rows):
            children = [c for c in range(i + 1, min(n, int(this_time[s]))) if tree_parents[s, c] == i]
            follow = children and rng.random() < 0.6
            targets.append(int(tree_tokens[s, rng.choice(children)]) if follow else int(rng.integers(-1, vocab)))
        cu.append(cu[-1] + rows)
    if rng.random() < 0.2:  # padding rows at the end
        targets += [int(v) for v in rng.integers(0, vocab, size=3)]
    step = rng.integers(0, 50, size=b).astype(np.int64)
    max_dec = np.where(rng.random(b) < 0.2, step + rng.integers(0, 4, size=b), 1000).astype(np.int64)
    end_tokens = rng.choice(vocab, size=int(rng.integers(1, 3)), replace=False).astype(np.int64)
    targets = np.array(targets, np.int64)
    rejection = strategy == "rejection"
    arrays = {
        "accept_tokens": rng.integers(-5, 5, size=(b, k + 1)).astype(np.int64),
        "accept_num": rng.integers(0, 3, size=b).astype(np.int32),
        "draft_tree_tokens": tree_tokens,
        "draft_tree_parents": tree_parents,
        "target_tokens": None if rejection else targets,
        "seed": rng.integers(-(2**63), 2**63 - 1, size=b, dtype=np.int64),
        "step_idx": step,
        "stop_flags": rng.random(b) < 0.05,
        "is_block_step": rng.random(b) < 0.05,
        "seq_lens_encoder": enc,
        "seq_lens_this_time": this_time,
        "cu_seqlens_q_output": np.array(cu, np.int32),
        "max_dec_len": max_dec,
        "end_tokens": end_tokens,
        "target_probs": _probs(rng, len(targets), vocab, targets) if rejection else None,
        "draft_probs": _probs(rng, len(targets), vocab, targets) if rejection else None,
    }
    return arrays, {"strategy": strategy}


def copies(arrays: dict) -> dict:
    return {name: None if value is None else np.ascontiguousarray(value).copy() for name, value in arrays.items()}


def redraft_from_q(rng: np.random.Generator, arrays: dict, *, one_hot: bool) -> dict:
    """A REJECTION case's trees as a drafter makes them: each node's children drawn i.i.d. from the node's
    ``draft_probs`` row, often a new one near the target's (sampled trees), or that row made one-hot on the first child's token (deterministic
    top-k trees, the runner's ``first_child_one_hot``). Returns new arrays."""
    out = copies(arrays)
    tokens, parents, q, p = (
        out[name] for name in ("draft_tree_tokens", "draft_tree_parents", "draft_probs", "target_probs")
    )
    cu, vocab = out["cu_seqlens_q_output"], q.shape[1]
    for s in range(len(out["seq_lens_this_time"])):
        nodes = min(int(out["seq_lens_this_time"][s]), tokens.shape[1], int(cu[s + 1] - cu[s]))
        if out["seq_lens_encoder"][s] != 0:
            continue
        for i in range(nodes):
            children = [c for c in range(i + 1, nodes) if parents[s, c] == i]
            row = q[cu[s] + i]
            if one_hot:
                first = int(tokens[s, children[0]]) if children else -1
                row[:] = 0
                if 0 <= first < vocab:
                    row[first] = 1
                continue
            target = p[cu[s] + i]
            if rng.random() < 0.7 and np.isfinite(target).all() and target.sum() > 0:
                row[:] = rng.dirichlet(np.ones(vocab))  # a draft near the target, but not peaked with it
                target[:] = 0.6 * row + 0.4 * target / target.sum()
            weights = np.where(np.isfinite(row) & (row > 0), row, 0).astype(np.float64)
            if children and weights.sum() > 0:
                tokens[s, children] = rng.choice(vocab, size=len(children), p=weights / weights.sum())
    return out


def off_first_child_steps(accept_nodes: np.ndarray, parents: np.ndarray) -> int:
    """How many steps of the accepted paths went into a child other than its parent's first."""
    count = 0
    for s, path in enumerate(accept_nodes):
        for node, child in zip(path[:-1], path[1:]):
            if child < 0:
                break
            count += int(child != next(c for c in range(node + 1, len(parents[s])) if parents[s, c] == node))
    return count


def widest_node_case(rng: np.random.Generator, vocab: int = 200) -> tuple[dict, dict]:
    """One slot whose root has N - 1 = 127 children drawn from q, REJECTION: ``p`` mostly on tokens ``q``
    never draws, so most or all tries are rejected (the most totals a node keeps)."""
    n = 128
    q = np.zeros(vocab, np.float32)
    q[: vocab // 2] = rng.dirichlet(np.ones(vocab // 2))
    p = rng.dirichlet(np.ones(vocab)).astype(np.float32)
    p[: vocab // 2] *= np.float32(rng.choice([0.0, 0.01]))
    tokens = np.concatenate([[0], rng.choice(vocab, size=n - 1, p=q / q.sum())]).astype(np.int64)
    leaf_rows = rng.dirichlet(np.ones(vocab), size=n - 1).astype(np.float32)
    arrays = {
        "accept_tokens": np.zeros((1, 2), np.int64),
        "accept_num": np.zeros(1, np.int32),
        "draft_tree_tokens": tokens[None],
        "draft_tree_parents": np.concatenate([[-1], np.zeros(n - 1)])[None].astype(np.int32),
        "target_tokens": None,
        "seed": rng.integers(-(2**63), 2**63 - 1, size=1, dtype=np.int64),
        "step_idx": rng.integers(0, 50, size=1).astype(np.int64),
        "stop_flags": np.zeros(1, bool),
        "is_block_step": np.zeros(1, bool),
        "seq_lens_encoder": np.zeros(1, np.int32),
        "seq_lens_this_time": np.full(1, n, np.int32),
        "cu_seqlens_q_output": np.array([0, n], np.int32),
        "max_dec_len": np.full(1, 1000, np.int64),
        "end_tokens": np.array([vocab - 1], np.int64),
        "target_probs": np.concatenate([p[None], leaf_rows]),
        "draft_probs": np.concatenate([q[None], leaf_rows]),
    }
    return arrays, {"strategy": "rejection"}

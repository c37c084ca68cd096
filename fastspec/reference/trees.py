"""Reference ``build_draft_tree`` and ``verify_draft_tree``: the rules of docs/ops/draft_tree.md, literally,
one slot at a time (the tree layout is docs/trees.md)."""

from __future__ import annotations

import numpy as np

from fastspec.core.errors import FastspecArgumentError
from fastspec.core.refusals import tree_fault
from fastspec.reference.multidraft import NodeTargets, NodeTries
from fastspec.reference.sampling import as_f32_probs
from fastspec.reference.slots import SlotInputs, flat, wrap64

TREE_STRATEGIES = ("greedy", "target_match", "rejection")


def _better(score: float, index: int, best_score: float, best: int) -> bool:
    """Score descending, ties by the lower candidate index (float32 comparisons, like the kernels)."""
    return best < 0 or score > best_score or (score == best_score and index < best)


def build_draft_tree(
    candidate_tokens: np.ndarray,
    candidate_parents: np.ndarray,
    candidate_scores: np.ndarray,
    draft_tree_tokens: np.ndarray,
    seq_lens_this_time: np.ndarray,
    seq_lens_encoder: np.ndarray,
    seq_lens_decoder: np.ndarray,
    *,
    max_depth: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Returns ``(draft_tree_tokens, seq_lens_this_time, draft_tree_parents, draft_tree_depths)``, the
    in-place ones as updated copies (inputs are not modified)."""
    tokens_out = np.array(draft_tree_tokens, dtype=np.int64, copy=True)
    lens_out = np.array(seq_lens_this_time, dtype=np.int32, copy=True)
    lens, enc, dec = lens_out.reshape(-1), flat(seq_lens_encoder), flat(seq_lens_decoder)
    batch, cols = tokens_out.shape
    parents_out = np.full((batch, cols), -1, np.int32)
    depths_out = np.full((batch, cols), -1, np.int32)
    depths_out[:, 0] = 0
    scores = np.asarray(candidate_scores, dtype=np.float32)
    count = scores.shape[1]
    for b in range(batch):
        tokens_out[b, 1:] = -1
        if enc[b] > 0:
            continue  # prefill: a root-only tree, seq_lens_this_time unchanged
        if not (enc[b] == 0 and dec[b] > 0):
            lens[b] = 0
            continue
        node_of = [-1] * count  # candidate -> node
        nodes = 1
        while nodes < cols:
            best, best_score = -1, np.float32(0)
            for j in range(count):
                token, parent, score = int(candidate_tokens[b, j]), int(candidate_parents[b, j]), scores[b, j]
                if node_of[j] >= 0 or token < 0 or np.isnan(score) or parent < -1 or parent >= j:
                    continue
                if parent >= 0 and (node_of[parent] < 0 or depths_out[b, node_of[parent]] >= max_depth):
                    continue
                if _better(score, j, best_score, best):
                    best, best_score = j, score
            if best < 0:
                break
            parent = int(candidate_parents[b, best])
            parent_node = 0 if parent < 0 else node_of[parent]
            node_of[best] = nodes
            tokens_out[b, nodes] = candidate_tokens[b, best]
            parents_out[b, nodes] = parent_node
            depths_out[b, nodes] = depths_out[b, parent_node] + 1
            nodes += 1
        lens[b] = nodes
    return tokens_out, lens_out, parents_out, depths_out


def tree_error(parents: np.ndarray, nodes: int, max_depth: int) -> str | None:
    """Why the first ``nodes`` entries of one slot's ``draft_tree_parents`` are not a tree of depth at most
    ``max_depth`` in the layout (docs/trees.md), or None when they are."""
    if nodes > len(parents):
        return tree_fault("too_many_nodes", nodes=nodes, cols=len(parents))
    depth = [0] * max(nodes, 1)
    for i in range(1, nodes):
        parent = int(parents[i])
        if parent < 0:
            return tree_fault("no_parent", node=i, parent=parent)
        if parent >= i:
            return tree_fault("cycle" if parent == i else "parent_after", node=i, parent=parent)
        depth[i] = depth[parent] + 1
        if depth[i] > max_depth:
            return tree_fault("too_deep", node=i, depth=depth[i], max_depth=max_depth)
    return None


def check_draft_trees(
    op: str,
    draft_tree_parents: np.ndarray,
    seq_lens_this_time: np.ndarray,
    seq_lens_encoder: np.ndarray,
    max_depth: int,
) -> None:
    """Raises :class:`FastspecArgumentError` naming ``op``, the argument, the slot and the node for the first
    decode slot whose tree is malformed (the kernels judge no drafts of such a slot)."""
    parents = np.asarray(draft_tree_parents)
    lens, enc = flat(seq_lens_this_time), flat(seq_lens_encoder)
    for b in range(parents.shape[0]):
        if enc[b] != 0 or lens[b] < 1:
            continue
        error = tree_error(parents[b], int(lens[b]), max_depth)
        if error:
            raise FastspecArgumentError(f"{op}: argument 'draft_tree_parents' of slot {b} is not a tree: {error}")


def verify_draft_tree(
    accept_tokens: np.ndarray,
    accept_num: np.ndarray,
    draft_tree_tokens: np.ndarray,
    draft_tree_parents: np.ndarray,
    target_tokens: np.ndarray | None,
    seed: np.ndarray | None,
    step_idx: np.ndarray,
    stop_flags: np.ndarray,
    is_block_step: np.ndarray,
    seq_lens_encoder: np.ndarray,
    seq_lens_this_time: np.ndarray,
    cu_seqlens_q_output: np.ndarray,
    max_dec_len: np.ndarray,
    end_tokens: np.ndarray,
    target_probs: np.ndarray | None = None,
    draft_probs: np.ndarray | None = None,
    *,
    strategy: str,
    check: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Returns ``(accept_tokens, accept_num, accept_nodes)``, the in-place ones as updated copies.

    ``check``: refuse a malformed tree (the front ends' rule); False gives the kernels' answer for one
    (the slot judges no drafts)."""
    strategy = strategy.lower()
    if strategy not in TREE_STRATEGIES:
        raise ValueError(f"verify_draft_tree: unknown strategy {strategy!r}")
    out = np.array(accept_tokens, dtype=np.int64, copy=True)
    num_out = np.array(accept_num, dtype=np.int32, copy=True)
    num = num_out.reshape(-1)
    batch, cols = out.shape
    k = cols - 1
    if check:
        check_draft_trees("verify_draft_tree", draft_tree_parents, seq_lens_this_time, seq_lens_encoder, k)
    nodes_out = np.full((batch, cols), -1, np.int32)
    slots = SlotInputs.of(locals())
    if strategy == "rejection":  # SpecInfer's tries at each node (fastspec/reference/multidraft.py)
        p_rows, q_rows = as_f32_probs(target_probs), as_f32_probs(draft_probs)
        rows = p_rows.shape[0]

        def judge(b: int, t: int, position: int) -> NodeTries | NodeTargets:
            return NodeTries(p_rows[t], q_rows[t], int(slots.seed[b]), position)
    else:
        targets = flat(target_tokens)
        rows = len(targets)

        def judge(b: int, t: int, position: int) -> NodeTries | NodeTargets:
            return NodeTargets(int(targets[t]))

    for b, prefill, need, first in slots.judged_slots(out, num, rows):
        nodes = 1 if prefill or tree_error(draft_tree_parents[b], need, k) else need
        parents, tokens = draft_tree_parents[b], draft_tree_tokens[b]
        node, emitted, decided = 0, [], []
        while True:
            children = [c for c in range(node + 1, nodes) if int(parents[c]) == node]
            position = wrap64(int(slots.step_idx[b]) + len(emitted))
            node_judge = judge(b, first + node, position)
            child = next((c for c in children if node_judge.accepts(int(tokens[c]))), -1)
            if child >= 0:
                drawn = int(tokens[child])
            else:  # every child rejected (a correction), or a leaf (a bonus draw)
                drawn = node_judge.correction()
                drawn = -1 if drawn is None else drawn
                others = children[1:]  # the chain's draft is not followed after a correction
                child = next((c for c in others if int(tokens[c]) == drawn), -1) if drawn >= 0 else -1
            decided.append(node)
            if slots.emit(b, emitted, slots.end_tokens[0] if drawn < 0 else drawn) or child < 0:
                break
            node = child
        out[b, : len(emitted)] = emitted
        nodes_out[b, : len(decided)] = decided
        num[b] = len(emitted)
    return out, num_out, nodes_out

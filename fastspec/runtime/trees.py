"""What a runner does with a draft tree (docs/trees.md). On the host (numpy), what the target forward needs:
each node's attention to the other nodes of its slot, and its position (one pass in node order: parents
come first). On the device, inside the step's programs: the targets and draft rows verification reads."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import paddle

from fastspec import ops
from fastspec.runtime.state import SamplingSets, SpecState


def tree_attention_mask(draft_tree_parents: np.ndarray, node_counts: np.ndarray) -> np.ndarray:
    """``mask[b, i, j]``: node ``j`` is node ``i`` or one of its ancestors, for ``i, j`` below the slot's node
    count (``seq_lens_this_time``); bool ``[B, N, N]``. A row ``i`` attends to the cache and to ``mask[b, i]``."""
    parents = np.asarray(draft_tree_parents)
    counts = np.asarray(node_counts).reshape(-1)
    batch, n = parents.shape
    mask = np.zeros((batch, n, n), dtype=bool)
    for b in range(batch):
        for i in range(min(int(counts[b]), n)):
            parent = int(parents[b, i])
            if i > 0 and 0 <= parent < i:
                mask[b, i] = mask[b, parent]
            mask[b, i, i] = True
    return mask


def tree_positions(draft_tree_depths: np.ndarray, seq_lens_decoder: np.ndarray) -> np.ndarray:
    """Each node's position: ``seq_lens_decoder[b] + depth`` (the cache holds positions ``0 .. dec - 1``),
    -1 for unused nodes (depth -1); int64 ``[B, N]``."""
    depths = np.asarray(draft_tree_depths, dtype=np.int64)
    decoder = np.asarray(seq_lens_decoder, dtype=np.int64).reshape(-1, 1)
    return np.where(depths >= 0, decoder + depths, -1)


# -- on the device, inside a step's programs (fixed shapes, no host reads) ----------------------------


def _row_nodes(state: SpecState, rows: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor, paddle.Tensor]:
    """Per packed row: its slot and node (both clipped into range, int64) and whether it is a node's row."""
    slot = rows.astype("int64")
    safe = paddle.clip(slot, 0, state.max_num_seqs - 1)
    node = paddle.arange(rows.shape[0], dtype="int64") - paddle.gather(state.cu_seqlens_q_output[:-1], safe).astype(
        "int64"
    )
    valid = (slot >= 0) & (node >= 0) & (node < state.num_tree_nodes)
    return safe, paddle.clip(node, 0, state.num_tree_nodes - 1), valid


def _per_node(values: paddle.Tensor, slot: paddle.Tensor, node: paddle.Tensor) -> paddle.Tensor:
    """``values [B, N]`` at each row's (slot, node)."""
    return paddle.gather(values.reshape([-1]), slot * values.shape[1] + node)


def sample_at_depths(probs: paddle.Tensor, state: SpecState, rows: paddle.Tensor, sets: SamplingSets) -> paddle.Tensor:
    """TARGET_MATCH's targets of a tree step: row ``t`` of node ``i`` draws (``sample_tokens``, the request's
    seed) at position ``step_idx + depth[i]``, the position its token would take; int64 [T], -1 for padding.
    Each row is passed as its own request so that its position is its own."""
    slot, node, _ = _row_nodes(state, rows)
    depth = paddle.clip(_per_node(state.draft_tree_depths, slot, node), min=0).astype("int64")
    count = int(rows.shape[0])
    own = paddle.where(rows >= 0, paddle.arange(count, dtype="int32"), paddle.full([count], -1, dtype="int32"))
    return ops.sample_tokens(
        probs,
        paddle.gather(sets.top_p, slot),
        paddle.gather(sets.top_k, slot),
        paddle.gather(state.seed, slot),
        paddle.gather(state.step_idx, slot) + depth,
        own,
        paddle.arange(count + 1, dtype="int32"),
        paddle.gather(sets.min_p, slot),
    )


def first_child_one_hot(state: SpecState, rows: paddle.Tensor, vocab: int) -> paddle.Tensor:
    """REJECTION's draft rows of a tree step: row ``t`` of node ``i`` is one-hot on the token of ``i``'s first
    child (its deterministic draft), zeros for a leaf or a padding row; float32 [T, V]."""
    n = state.num_tree_nodes
    nodes = paddle.arange(n, dtype="int32")
    counts = state.seq_lens_this_time.reshape([-1, 1, 1])
    child = (state.draft_tree_parents.unsqueeze(1) == nodes.reshape([1, n, 1])) & (nodes.reshape([1, 1, n]) < counts)
    first = paddle.argmax(child.astype("int32"), axis=-1)  # [B, N]: the lowest child index (0 when none)
    tokens = paddle.take_along_axis(state.draft_tree_tokens, first, axis=1)
    tokens = paddle.where(child.any(axis=-1), tokens, paddle.full_like(tokens, -1))
    slot, node, valid = _row_nodes(state, rows)
    token = _per_node(tokens, slot, node)
    ok = valid & (token >= 0) & (token < vocab)
    one_hot = paddle.nn.functional.one_hot(paddle.clip(token, 0, vocab - 1), vocab).astype("float32")
    return one_hot * ok.astype("float32").unsqueeze(-1)


@dataclass
class TreeInputs:
    """What a model sees of a tree step besides the token grid (``ModelInputs.tree``). A slot's node ``i`` sits
    in grid column ``start + i`` (node 0 is the last committed token), at position ``positions[b, i]``, and
    attends to the committed tokens and to ``mask[b, i]`` (its ancestors and itself).

    start, nodes: int64 ``[B]``: node 0's column and the node count (0 and -1: no tree rows this step).
    mask: bool ``[B, N, N]`` (``tree_attention_mask``); positions: int64 ``[B, N]`` (``tree_positions``).
    row_col: int64 ``[T]``: each output row's grid column (``row_pos`` is its position).
    """

    start: np.ndarray
    nodes: np.ndarray
    mask: np.ndarray
    positions: np.ndarray
    row_col: np.ndarray

    def grid_positions(self, length: int) -> np.ndarray:
        """int64 ``[B, length]``: each grid column's position (its index, but for the tree's nodes)."""
        grid = np.tile(np.arange(length, dtype=np.int64), (len(self.start), 1))
        for b in np.flatnonzero(self.nodes > 0):
            start, n = int(self.start[b]), int(self.nodes[b])
            grid[b, start : start + n] = self.positions[b, :n]
        return grid

    def grid_mask(self, length: int) -> np.ndarray:
        """bool ``[B, length, length]``: causal attention, except that a node sees only its ancestors among
        the tree's columns."""
        grid = np.tile(np.tril(np.ones((length, length), dtype=bool)), (len(self.start), 1, 1))
        for b in np.flatnonzero(self.nodes > 0):
            start, n = int(self.start[b]), int(self.nodes[b])
            grid[b, start : start + n, start : start + n] = self.mask[b, :n, :n]
        return grid

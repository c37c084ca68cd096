"""What a runner's target forward needs from a draft tree (docs/trees.md): each node's attention to the
other nodes of its slot, and its position. numpy, on host arrays; a device runner builds the same from
``draft_tree_parents`` with its framework's ops (one pass in node order: parents come first)."""

from __future__ import annotations

import numpy as np


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

"""``ModelInputs``: what the model sees in one step, built from the state after ``SpecStep.prepare``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import paddle

from fastspec.runtime.state import SpecState
from fastspec.runtime.trees import TreeInputs, tree_attention_mask, tree_positions


@dataclass
class ModelInputs:
    """What a model sees in one step (``B`` slots, ``L`` positions, ``T`` output rows).

    tokens: int64 paddle ``[B, L]``: each slot's committed tokens, then this step's drafts
        (``draft_tokens[b, 1..n-1]``), then -1.
    lengths: int ``[B]``: valid entries of ``tokens`` per slot (0 for a slot with no rows).
    row_slot: int32 ``[T]``: the slot of each output row (``batch_id_per_token_output``).
    row_pos: int64 ``[T]``: the position whose next token the row predicts.
    prompt_lens: int ``[B]``; request_ids: the request in each slot (None when free).
    tree: a tree step's nodes (``fastspec.runtime.trees.TreeInputs``: their columns in ``tokens``, positions
        and attention), None for a chain. A model that reads the grid takes a row's column from ``row_col``.
    """

    tokens: paddle.Tensor
    lengths: np.ndarray
    row_slot: np.ndarray
    row_pos: np.ndarray
    prompt_lens: np.ndarray
    request_ids: list
    tree: TreeInputs | None = None

    @property
    def row_col(self) -> np.ndarray:
        """int64 ``[T]``: each row's column in ``tokens`` (its position for a chain; node 0's column + the
        node index for a tree)."""
        return self.row_pos if self.tree is None else self.tree.row_col


Model = Callable[[ModelInputs], paddle.Tensor]


def build_model_inputs(state: SpecState) -> tuple[ModelInputs, dict[int, tuple]]:
    """The token grid and row positions of this step; also what each slot drafted:
    ``(decode, drafts)``, for a tree ``(decode, nodes' tokens, parents, depths)`` of its nodes."""
    tokens = state.token_ids_all.numpy().copy()
    prompt_lens = state.prompt_lens.numpy()
    step_idx = state.step_idx.numpy()
    enc = state.seq_lens_encoder.numpy()
    rows = np.diff(state.cu_seqlens_q_output.numpy())
    if state.trees:
        nodes = state.draft_tree_tokens.numpy()
        parents, depths = state.draft_tree_parents.numpy(), state.draft_tree_depths.numpy()
        counts = np.where(enc > 0, 0, rows)
        positions = tree_positions(depths, state.seq_lens_decoder.numpy())
        tree = TreeInputs(start=np.where(counts > 0, prompt_lens + step_idx - 1, -1), nodes=counts.astype(np.int64),
                          mask=tree_attention_mask(parents, counts), positions=positions, row_col=np.zeros(0, np.int64))
    else:
        nodes = state.draft_tokens.numpy()
        tree = None
    lengths = np.zeros(state.max_num_seqs, dtype=np.int64)
    row_slot, row_pos, row_col, drafted = [], [], [], {}
    for b in np.flatnonzero(rows > 0):
        p, s, n = int(prompt_lens[b]), int(step_idx[b]), int(rows[b])
        if enc[b] > 0:  # prefill: one row, after the prompt (and the output a resumed request already has)
            lengths[b] = p + s
            row_slot.append(b)
            row_pos.append(p + s - 1)
            row_col.append(p + s - 1)
            drafted[b] = (False, nodes[b, 1:1]) if tree is None else (False, nodes[b, :1], parents[b, :1], depths[b, :1])
            continue
        drafts = nodes[b, 1:n]
        tokens[b, p + s : p + s + n - 1] = drafts
        lengths[b] = p + s + n - 1
        row_slot.extend([b] * n)
        row_col.extend(range(p + s - 1, p + s - 1 + n))
        if tree is None:
            row_pos.extend(range(p + s - 1, p + s - 1 + n))
            drafted[b] = (True, drafts.copy())
        else:
            row_pos.extend(positions[b, :n])
            drafted[b] = (True, nodes[b, :n].copy(), parents[b, :n].copy(), depths[b, :n].copy())
    if tree is not None:
        tree.row_col = np.asarray(row_col, dtype=np.int64)
    inputs = ModelInputs(
        tokens=paddle.to_tensor(tokens, place=state.place),
        lengths=lengths,
        row_slot=np.asarray(row_slot, dtype=np.int32),
        row_pos=np.asarray(row_pos, dtype=np.int64),
        prompt_lens=prompt_lens.copy(),
        request_ids=list(state.request_of_slot),
        tree=tree,
    )
    return inputs, drafted

"""``ModelInputs``: what the model sees in one step, built on the device from the state after ``SpecStep.prepare``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import paddle

from fastspec import ops
from fastspec.runtime.state import SpecState
from fastspec.runtime.trees import TreeInputs, tree_attention_mask, tree_positions


@dataclass
class ModelInputs:
    """What a model sees in one step (``B`` slots, ``L`` positions, ``T`` output rows), as device tensors.

    A chain step hands the model ``T = max_rows`` rows (``max_num_seqs * rows_per_slot``), built on
    the device without reading it: the packed rows first, then padding rows (``row_slot`` -1, ``row_pos``
    0) whose logits the step ignores.

    tokens: int64 ``[B, L]``: each slot's committed tokens, then this step's drafts
        (``draft_tokens[b, 1..n-1]``), then -1.
    lengths: int64 ``[B]``: valid entries of ``tokens`` per slot (0 for a slot with no rows).
    row_slot: int32 ``[T]``: the slot of each output row (``batch_id_per_token_output``; -1: padding).
    row_pos: int64 ``[T]``: the position whose next token the row predicts.
    prompt_lens: int64 ``[B]``; request_ids: the request in each slot (None when free; a host list).
    tree: a tree step's nodes (``fastspec.runtime.trees.TreeInputs``: their columns in ``tokens``, positions
        and attention, host arrays), None for a chain; a tree step's ``T`` is its packed rows. A model that
        reads the grid takes a row's column from ``row_col``.
    """

    tokens: paddle.Tensor
    lengths: paddle.Tensor
    row_slot: paddle.Tensor
    row_pos: paddle.Tensor
    prompt_lens: paddle.Tensor
    request_ids: list
    tree: TreeInputs | None = None

    @property
    def row_col(self) -> paddle.Tensor:
        """int64 ``[T]``: each row's column in ``tokens`` (its position for a chain; node 0's column + the
        node index for a tree)."""
        return self.row_pos if self.tree is None else paddle.to_tensor(self.tree.row_col, place=self.row_pos.place)


Model = Callable[[ModelInputs], paddle.Tensor]


def build_model_inputs(state: SpecState) -> tuple[ModelInputs, dict[int, tuple] | None]:
    """The token grid and row positions of this step; for a tree step also what each slot drafted
    (``(decode, nodes' tokens, parents, depths)`` of its nodes; None for a chain, whose drafts come with
    the step's status)."""
    if state.trees:
        return _tree_inputs(state)
    grid = ops.model_inputs(  # one op: the grid with this step's drafts, lengths, row positions
        state.token_ids_all,
        state.prompt_lens,
        state.step_idx,
        state.seq_lens_encoder,
        state.draft_tokens,
        state.cu_seqlens_q_output,
        state.batch_id_per_token_output,
    )
    inputs = ModelInputs(
        tokens=grid.tokens,
        lengths=grid.lengths,
        row_slot=state.batch_id_per_token_output,
        row_pos=grid.row_pos,
        prompt_lens=state.prompt_lens,
        request_ids=list(state.request_of_slot),
    )
    return inputs, None


def _tree_inputs(state: SpecState) -> tuple[ModelInputs, dict[int, tuple]]:
    """A tree step's inputs: its masks and positions are built on the host (the reads of a tree step)."""
    tokens = state.token_ids_all.numpy().copy()
    prompt_lens = state.prompt_lens.numpy()
    step_idx = state.step_idx.numpy()
    enc = state.seq_lens_encoder.numpy()
    rows = np.diff(state.cu_seqlens_q_output.numpy())
    nodes = state.draft_tree_tokens.numpy()
    parents, depths = state.draft_tree_parents.numpy(), state.draft_tree_depths.numpy()
    counts = np.where(enc > 0, 0, rows)
    positions = tree_positions(depths, state.seq_lens_decoder.numpy())
    tree = TreeInputs(
        start=np.where(counts > 0, prompt_lens + step_idx - 1, -1),
        nodes=counts.astype(np.int64),
        mask=tree_attention_mask(parents, counts),
        positions=positions,
        row_col=np.zeros(0, np.int64),
    )
    lengths = np.zeros(state.max_num_seqs, dtype=np.int64)
    row_slot, row_pos, row_col, drafted = [], [], [], {}
    for b in np.flatnonzero(rows > 0):
        p, s, n = int(prompt_lens[b]), int(step_idx[b]), int(rows[b])
        if enc[b] > 0:  # prefill: one row, after the prompt (and the output a resumed request already has)
            lengths[b] = p + s
            row_slot.append(b)
            row_pos.append(p + s - 1)
            row_col.append(p + s - 1)
            drafted[b] = (False, nodes[b, :1], parents[b, :1], depths[b, :1])
            continue
        tokens[b, p + s : p + s + n - 1] = nodes[b, 1:n]
        lengths[b] = p + s + n - 1
        row_slot.extend([b] * n)
        row_col.extend(range(p + s - 1, p + s - 1 + n))
        row_pos.extend(positions[b, :n])
        drafted[b] = (True, nodes[b, :n].copy(), parents[b, :n].copy(), depths[b, :n].copy())
    tree.row_col = np.asarray(row_col, dtype=np.int64)
    place = state.place
    inputs = ModelInputs(
        tokens=paddle.to_tensor(tokens, place=place),
        lengths=paddle.to_tensor(lengths, place=place),
        row_slot=paddle.to_tensor(np.asarray(row_slot, dtype=np.int32), place=place),
        row_pos=paddle.to_tensor(np.asarray(row_pos, dtype=np.int64), place=place),
        prompt_lens=state.prompt_lens,
        request_ids=list(state.request_of_slot),
        tree=tree,
    )
    return inputs, drafted

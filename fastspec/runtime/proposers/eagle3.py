"""EAGLE3 drafting: a draft head over the target's aux hidden states, and the target-side helper.

EAGLE3 drafts from a few of the target's layer states (``AuxHiddenStatesMixin``; by default
the inputs of layers ``(2, L // 2, L - 3)``) rather than from its last hidden state alone. The
runner's target returns ``(logits [T, V], hidden [T, n * H])`` with ``hidden`` the
concatenation of the ``n`` aux states at each output row (``concat_aux_rows``). The head fuses
that ``n * H`` input to ``H`` on its first draft step and chains its own ``H``-wide output
afterwards, so ``DraftModelProposer`` sizes its buffers from the head's declared widths:
``input_hidden_size = n * H`` (the target hidden it keeps per slot) and ``hidden_size = H``
(the chained state).

Config: ``method: eagle3`` (``configs/eagle3.yaml``) builds a ``DraftModelProposer`` around
the head the runner is given; ``aux_layer_ids`` picks the target layers.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import paddle
from paddle import nn

from fastspec.runtime.proposers.draft_model import DraftShapeError


class Eagle3DraftHead(nn.Layer):
    """An EAGLE3-style draft head (random-init unless weights are loaded).

    ``forward(input_ids [B], hidden [B, n * H] or [B, H]) -> (logits [B, V], hidden_out [B, H])``:

    - a ``[B, n * H]`` input (the target's aux states, first draft step) is fused to ``H`` by
      ``fc``; a ``[B, H]`` input (the previous draft step's output) is used as it is;
    - ``h' = mix([norm(embed(token)); norm(h)])``, ``logits = lm_head(norm(h'))``.

    Args:
        vocab_size: V.
        hidden_size: H, the target's hidden width.
        num_aux: n, the aux states the target concatenates (3 for EAGLE3).
        seed: the initialisation seed.
    """

    def __init__(self, vocab_size: int, hidden_size: int, num_aux: int = 3, seed: int = 0) -> None:
        super().__init__()
        if num_aux < 2:
            raise ValueError(
                f"Eagle3DraftHead: num_aux must be >= 2 (the fused width must differ from H), got {num_aux}"
            )
        paddle.seed(seed)
        self.vocab_size, self.hidden_size, self.input_hidden_size = vocab_size, hidden_size, num_aux * hidden_size
        self.fc = nn.Linear(num_aux * hidden_size, hidden_size, bias_attr=False)
        self.embed = nn.Embedding(vocab_size, hidden_size)
        self.norm_token = nn.LayerNorm(hidden_size)
        self.norm_hidden = nn.LayerNorm(hidden_size)
        self.mix = nn.Linear(2 * hidden_size, hidden_size)
        self.norm_out = nn.LayerNorm(hidden_size)
        self.lm_head = nn.Linear(hidden_size, vocab_size)
        self.eval()

    def fuse(self, hidden: paddle.Tensor) -> paddle.Tensor:
        """``[B, n * H]`` aux states -> ``[B, H]``; a ``[B, H]`` state passes through."""
        width = hidden.shape[-1]
        if width == self.input_hidden_size:
            return self.fc(hidden)
        if width != self.hidden_size:
            raise DraftShapeError(
                f"Eagle3DraftHead: hidden must be [B, {self.input_hidden_size}] (aux states) or [B, {self.hidden_size}], "
                f"got {list(hidden.shape)}"
            )
        return hidden

    def forward(self, input_ids: paddle.Tensor, hidden: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor]:
        h = self.fuse(hidden)
        ids = paddle.clip(input_ids, 0, self.vocab_size - 1)
        x = paddle.concat([self.norm_token(self.embed(ids)), self.norm_hidden(h)], axis=-1)
        h = paddle.tanh(self.mix(x))
        return self.lm_head(self.norm_out(h)), h


def concat_aux_rows(aux: Sequence[paddle.Tensor], row_slot, row_pos) -> paddle.Tensor:
    """The aux states of the output rows, concatenated: ``[T, n * H]``.

    Args:
        aux: ``n`` tensors ``[B, L, H]`` (the mixin's output for a full-grid forward).
        row_slot, row_pos: the slot and grid column of each output row (``ModelInputs.row_slot``, ``.row_col``:
            device tensors, or arrays); a row of slot -1 (padding) takes slot 0's.
    """
    b, length, h = aux[0].shape
    place = aux[0].place
    as_tensor = lambda v: v if isinstance(v, paddle.Tensor) else paddle.to_tensor(np.asarray(v), place=place)  # noqa: E731
    index = paddle.clip(as_tensor(row_slot), min=0).astype("int64") * length + as_tensor(row_pos).astype("int64")
    return paddle.concat([paddle.gather(a.reshape([b * length, h]), index) for a in aux], axis=-1)

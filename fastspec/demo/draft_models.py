"""Draft heads and target hidden-state taps for MTP / EAGLE-style speculation.

A draft layer is ``draft(input_ids int64 [B], hidden float32 [B, H]) -> (logits [B, V],
hidden_out [B, H])`` (see ``fastspec.runtime.proposers.DraftModelProposer``). A target that feeds one
returns ``(logits [T, V], hidden [T, H])`` instead of logits alone: ``hidden[t]`` is the target's
last hidden state at output row ``t``.

- ``TinyDraftHead``: a random-init MTP-style head (embedding of the token, concatenated with
  the hidden state, one mixing layer, an LM head); the shape of a real MTP module.
- ``GridHiddenStates``: wraps a target that runs on the full ``[B, L]`` grid (``TinyTransformer``)
  and taps the output of one of its layers to return the hidden states of the output rows.
- ``ReplayHiddenStates`` + ``ReplayDraftHead``: the draft-side companion of ``ReplayModel``
  (a stand-in for a trained model on copy-heavy work). The target's hidden state at a row is
  ``[request, k]`` (k = the index of the generated token the row predicts); the head predicts
  reference token ``k + 1`` (with probability ``peak``, else a fixed wrong token) and outputs
  ``[request, k + 1]``, so chained hidden states keep it on track and unchained ones do not.
- EAGLE3 (``--method eagle3``): ``GridAuxHiddenStates`` returns a ``TinyTransformer``'s aux
  states (through ``AuxHiddenStatesMixin``) concatenated per row, for ``Eagle3DraftHead``;
  ``ReplayAuxHiddenStates`` + ``ReplayEagle3Head`` are the replay stand-ins: a made-up residual
  stream ``(i + 1) * [request, k]`` at layer input ``i``, which the head's fixed fusion undoes.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np
import paddle
from paddle import nn

from fastspec.demo.models import grid_rows, row_requests
from fastspec.runtime.aux_hidden import AuxHiddenStatesMixin


class TinyDraftHead(nn.Layer):
    """Random-init MTP-style draft head: ``h' = tanh(W [norm(embed(token)); norm(hidden)])``, logits = head(h')."""

    def __init__(self, vocab_size: int, hidden_size: int, seed: int = 0) -> None:
        super().__init__()
        paddle.seed(seed)
        self.embed = nn.Embedding(vocab_size, hidden_size)
        self.norm_token = nn.LayerNorm(hidden_size)
        self.norm_hidden = nn.LayerNorm(hidden_size)
        self.mix = nn.Linear(2 * hidden_size, hidden_size)
        self.head = nn.Linear(hidden_size, vocab_size)
        self.vocab_size, self.hidden_size, self.input_hidden_size = vocab_size, hidden_size, hidden_size
        self.eval()

    def forward(self, input_ids: paddle.Tensor, hidden: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor]:
        ids = paddle.clip(input_ids, 0, self.vocab_size - 1)
        x = paddle.concat([self.norm_token(self.embed(ids)), self.norm_hidden(hidden)], axis=-1)
        h = paddle.tanh(self.mix(x))
        return self.head(h), h


class GridHiddenStates:
    """Calls ``model`` and also returns the output of ``layer`` (``[B, L, H]``) at the output rows.

    For targets that evaluate the whole ``[B, L]`` token grid (``TinyTransformer``): row ``t`` is
    grid column ``(row_slot[t], row_col[t])``. Default layer: the model's ``ln`` (final norm).
    """

    def __init__(self, model: Any, layer: nn.Layer | None = None) -> None:
        self.model = model
        self._seen: list[paddle.Tensor] = []
        layer = layer if layer is not None else model.ln
        layer.register_forward_post_hook(lambda _layer, _inputs, output: self._seen.append(output))

    def __call__(self, inputs: Any) -> tuple[paddle.Tensor, paddle.Tensor]:
        self._seen.clear()
        logits = self.model(inputs)
        grid = self._seen[-1]
        b, length, h = grid.shape
        return logits, paddle.gather(grid.reshape([b * length, h]), grid_rows(inputs, length))


class ReplayHiddenStates:
    """Wraps a ``ReplayModel``: hidden state ``[request, k]`` (float32) per output row."""

    def __init__(self, model: Callable) -> None:
        self.model = model

    def __call__(self, inputs: Any) -> tuple[paddle.Tensor, paddle.Tensor]:
        logits = self.model(inputs)
        k = inputs.row_pos + 1 - paddle.gather(inputs.prompt_lens.astype("int64"), paddle.clip(inputs.row_slot, min=0))
        return logits, paddle.stack([row_requests(inputs), k], axis=1).astype("float32")


class ReplayDraftHead(nn.Layer):
    """Predicts ``references[request][k + 1]`` from hidden ``[request, k]``; outputs ``[request, k + 1]``.

    With probability ``1 - peak`` (a fixed hash of request and position) it predicts a wrong token
    instead, so acceptance is realistic rather than perfect; the reference token then keeps the
    second-highest logit (``runner_up`` below the wrong one's 20), as a trained head's top-k often
    holds the right token: what a draft tree recovers. Pure Paddle ops: it compiles with
    ``paddle.jit.to_static``.
    """

    def __init__(
        self,
        references: Mapping[int, Sequence[int]],
        vocab_size: int,
        end_token: int = 0,
        peak: float = 0.9,
        runner_up: float = 10.0,
    ) -> None:
        super().__init__()
        n = max(references) + 1 if references else 1
        width = max((len(v) for v in references.values()), default=0) + 2
        table = np.full((n, width), end_token, np.int64)
        for r, ref in references.items():
            table[r, : len(ref)] = ref
        self.table = paddle.to_tensor(table.reshape(-1))
        self.width, self.rows, self.vocab_size, self.peak, self.runner_up = (
            width,
            n,
            vocab_size,
            float(peak),
            float(runner_up),
        )
        self.hidden_size = self.input_hidden_size = 2  # [request, k]

    def forward(self, input_ids: paddle.Tensor, hidden: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor]:
        request = paddle.clip(hidden[:, 0], 0, self.rows - 1).astype("int64")
        k = paddle.clip(hidden[:, 1] + 1, 0, self.width - 1).astype("int64")
        right = paddle.gather(self.table, request * self.width + k)
        roll = paddle.remainder(request * 7919 + k * 104729, paddle.full_like(k, 1000)).astype("float32") / 1000.0
        wrong = paddle.remainder(right + 1 + k % 7, paddle.full_like(right, self.vocab_size))
        token = paddle.where(roll < self.peak, right, wrong)
        missed = (token != right).astype("float32").unsqueeze(-1) * self.runner_up
        logits = (
            nn.functional.one_hot(token, self.vocab_size).astype("float32") * 20.0
            + nn.functional.one_hot(right, self.vocab_size).astype("float32") * missed
        )
        return logits, hidden + paddle.to_tensor([0.0, 1.0], dtype="float32")


class GridAuxHiddenStates:
    """Calls a ``TinyTransformer`` with aux states configured (``layer_ids``, default EAGLE3's)
    and returns ``(logits, hidden [T, n * d])``: the aux states of the output rows, concatenated.
    ``aux_layer_ids``: the ids in force (the same name as on the mixin)."""

    def __init__(self, model: Any, layer_ids: Sequence[int] | str = "default") -> None:
        self.model = model
        self.aux_layer_ids = model.configure_aux_hidden_states(layer_ids)

    def __call__(self, inputs: Any) -> tuple[paddle.Tensor, paddle.Tensor]:
        from fastspec.runtime.proposers.eagle3 import concat_aux_rows

        logits, aux = self.model.run(inputs)
        return logits, concat_aux_rows(aux, inputs.row_slot, inputs.row_col)


class ReplayAuxHiddenStates(AuxHiddenStatesMixin):
    """Wraps a ``ReplayModel`` as a ``num_layers``-layer decoder whose residual stream at layer
    input ``i`` is ``(i + 1) * [request, k]``; returns ``(logits, [T, 2 n])``, the mixin's aux
    states at ``layer_ids`` concatenated."""

    def __init__(self, model: Callable, layer_ids: Sequence[int], num_layers: int = 4) -> None:
        self.model, self.num_layers = model, num_layers
        self.configure_aux_hidden_states(layer_ids)

    def __call__(self, inputs: Any) -> tuple[paddle.Tensor, paddle.Tensor]:
        logits, base = ReplayHiddenStates(self.model)(inputs)
        collector = self.aux_collector()
        for i in range(self.num_layers + 1):  # layer inputs 0..L-1, then L: the last layer's output
            collector.collect(i, base * float(i + 1), None)
        _, aux = collector.output(base)
        return logits, paddle.concat(aux, axis=-1)


class ReplayEagle3Head(ReplayDraftHead):
    """``ReplayDraftHead`` behind an EAGLE3 fusion: a ``[B, 2 n]`` input (the aux states of
    ``ReplayAuxHiddenStates`` at ``layer_ids``) is fused back to ``[request, k]`` by a fixed
    linear map; a ``[B, 2]`` input (its own chained output) is used as it is."""

    def __init__(
        self,
        references: Mapping[int, Sequence[int]],
        vocab_size: int,
        layer_ids: Sequence[int],
        end_token: int = 0,
        peak: float = 0.9,
    ) -> None:
        super().__init__(references, vocab_size, end_token=end_token, peak=peak)
        n = len(layer_ids)
        fuse = np.zeros((2 * n, 2), np.float32)
        for j, layer in enumerate(layer_ids):
            fuse[2 * j, 0] = fuse[2 * j + 1, 1] = 1.0 / (n * (layer + 1))
        self.fuse = paddle.to_tensor(fuse)
        self.input_hidden_size = 2 * n

    def forward(self, input_ids: paddle.Tensor, hidden: paddle.Tensor) -> tuple[paddle.Tensor, paddle.Tensor]:
        if hidden.shape[-1] == self.input_hidden_size:
            hidden = paddle.round(paddle.matmul(hidden, self.fuse))
        return super().forward(input_ids, hidden)

"""The two target models of the demo and the tests (the runner takes any callable of this shape).

A model is a callable ``model(inputs: ModelInputs) -> logits [T, V]`` returning the logits of
the packed output rows (see ``fastspec.runtime.generation.ModelInputs``).

- ``TinyTransformer``: a small causal Paddle transformer with random weights (runs on CPU).
  It always runs on the full ``[B, L]`` grid so each row's logits are bit-identical whatever
  follows it (the lossless tests rely on that). In a tree step (``inputs.tree``) each node takes
  its own position and attends to the committed tokens and its ancestors only.
- ``ReplayModel``: given a reference continuation per request, puts ``peak`` of its probability
  on the reference's next token (by position) and spreads the rest with hashed noise: a stand-in
  for a trained model on copy-heavy tasks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np
import paddle
from paddle import nn

from fastspec.runtime.aux_hidden import AuxHiddenStatesMixin

if TYPE_CHECKING:
    from fastspec.runtime.generation import ModelInputs


class _Block(nn.Layer):
    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x: paddle.Tensor, mask: paddle.Tensor) -> paddle.Tensor:
        b, length, d = x.shape
        h = self.n_heads
        q, k, v = paddle.split(self.qkv(self.ln1(x)), 3, axis=-1)

        def heads(t):
            return t.reshape([b, length, h, d // h]).transpose([0, 2, 1, 3])

        q, k, v = heads(q), heads(k), heads(v)
        att = paddle.matmul(q, k, transpose_y=True) / float(np.sqrt(d // h)) + mask
        att = nn.functional.softmax(att, axis=-1)
        y = paddle.matmul(att, v).transpose([0, 2, 1, 3]).reshape([b, length, d])
        x = x + self.proj(y)
        return x + self.mlp(self.ln2(x))


class TinyTransformer(nn.Layer, AuxHiddenStatesMixin):
    """Random-init causal transformer: ``vocab_size`` tokens, ``max_len`` positions.

    EAGLE3 aux hidden states: ``configure_aux_hidden_states(ids)`` then ``run(inputs)`` returns
    the residual stream at those layer inputs (``n_layers``: the last block's output) too.
    """

    def __init__(
        self, vocab_size: int, max_len: int, d_model: int = 64, n_layers: int = 2, n_heads: int = 4, seed: int = 0
    ):
        super().__init__()
        paddle.seed(seed)
        self.vocab_size, self.max_len = vocab_size, max_len
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.blocks = nn.LayerList([_Block(d_model, n_heads) for _ in range(n_layers)])
        self.num_layers = n_layers
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)
        # Sharper logits than the default init so greedy text has structure (and repeats).
        with paddle.no_grad():
            self.head.weight.set_value(self.head.weight * 8.0)
        causal = np.triu(np.full((max_len, max_len), -1e9, dtype=np.float32), k=1)
        self._mask = paddle.to_tensor(causal)
        self.eval()

    def forward(self, inputs: ModelInputs) -> paddle.Tensor:
        return self.run(inputs)[0]

    @paddle.no_grad()
    def run(self, inputs: ModelInputs) -> tuple[paddle.Tensor, list[paddle.Tensor] | None]:
        """``(logits [T, V], aux)``: aux is None, or the configured layers' ``[B, L, d]`` grids."""
        tokens = inputs.tokens
        if tokens.shape[1] != self.max_len:
            raise ValueError(f"TinyTransformer: expected {self.max_len} positions, got {tokens.shape[1]}")
        ids = paddle.clip(tokens, 0, self.vocab_size - 1)
        pos, mask = paddle.arange(self.max_len, dtype="int64").unsqueeze(0), self._mask
        if inputs.tree is not None:  # a tree's nodes: their own positions, and only their ancestors in sight
            pos = paddle.to_tensor(
                np.clip(inputs.tree.grid_positions(self.max_len), 0, self.max_len - 1), place=ids.place
            )
            seen = inputs.tree.grid_mask(self.max_len)[:, None]
            mask = paddle.to_tensor(np.where(seen, np.float32(0), np.float32(-1e9)), place=ids.place)
        x = self.tok(ids) + self.pos(pos)
        collector = self.aux_collector()
        for i, block in enumerate(self.blocks):
            collector.collect(i, x, None)  # one residual stream: the block's input is x itself
            x = block(x, mask)
        collector.collect(len(self.blocks), x, None)
        out = collector.output(self.ln(x))
        x, aux = out if isinstance(out, tuple) else (out, None)
        flat = x.reshape([-1, x.shape[-1]])
        index = grid_rows(inputs, self.max_len)
        return self.head(paddle.gather(flat, index)), aux


def grid_rows(inputs: ModelInputs, length: int) -> paddle.Tensor:
    """int64 ``[T]``: each output row's index in a flattened ``[B, length]`` grid (padding rows: slot 0's)."""
    return paddle.clip(inputs.row_slot, min=0).astype("int64") * length + inputs.row_col


def row_requests(inputs: ModelInputs) -> paddle.Tensor:
    """int64 ``[T]``: the request of each output row (-1 for a free slot or a padding row)."""
    ids = paddle.to_tensor(
        np.array([-1 if r is None else r for r in inputs.request_ids], np.int64), place=inputs.row_slot.place
    )
    return paddle.where(
        inputs.row_slot >= 0,
        paddle.gather(ids, paddle.clip(inputs.row_slot, min=0)),
        paddle.full_like(inputs.row_pos, -1),
    )


NOISE_DRAWS = 1 << 20  # the replay model's noise table holds about this many Gumbel draws
MAX_NOISE_ROWS = 4096
HASH = 2654435761  # odd: consecutive keys get distinct noise rows


def noise_rows(vocab_size: int) -> int:
    """The replay model's noise rows for a vocabulary: a power of two, ``NOISE_DRAWS / V`` rounded down, 64 to
    ``MAX_NOISE_ROWS``."""
    rows = 64
    while rows * 2 * vocab_size <= NOISE_DRAWS and rows < MAX_NOISE_ROWS:
        rows *= 2
    return rows


class ReplayModel:
    """Puts ``peak`` of the probability on ``references[request][k]`` for the k-th generated token.

    Past the end of the reference the favoured token is ``end_token``. The rest of the mass follows
    Gumbel noise: a fixed table of ``noise_rows(V)`` rows of ``V`` draws (from ``seed``), one row per output
    row picked by a hash of (request, k), so the model is a pure function of its inputs. Each table row
    comes with the logit that gives each of its tokens probability ``peak`` over the row's other draws, so a
    call gathers whole rows and writes one logit into each: its cost is nearly flat in the rows it scores,
    as a real target's forward is at these token counts (weight-bound), where computing the noise row by row
    would grow with them. It runs as a few Paddle ops on the inputs' device tensors (reading nothing on the host).
    """

    def __init__(
        self,
        references: Mapping[int, Sequence[int]],
        vocab_size: int,
        end_token: int = 0,
        peak: float = 0.95,
        seed: int = 0,
    ):
        if not 0.0 < peak < 1.0:
            raise ValueError(f"ReplayModel: peak must be in (0, 1), got {peak}")
        self.references = {int(k): np.asarray(v, dtype=np.int64) for k, v in references.items()}
        self.vocab_size, self.end_token, self.peak, self.seed = vocab_size, end_token, peak, seed
        # the reference as a table: row r, column k = references[r][k], end_token past its end
        self._rows = max(self.references, default=-1) + 1
        self._width = max((len(v) for v in self.references.values()), default=0) + 1
        table = np.full((self._rows + 1, self._width), end_token, np.int64)
        for r, ref in self.references.items():
            if r >= 0:
                table[r, : len(ref)] = ref
        self._table = table.reshape(-1)
        u = np.random.default_rng(seed).random((noise_rows(vocab_size), vocab_size))
        noise = -np.log(-np.log(np.maximum(u, 1e-30)))
        # token j's logit when it is the favoured one: log(peak / (1 - peak)) + logsumexp(the row's other draws)
        exp = np.exp(noise)
        others = np.maximum(exp.sum(axis=1, keepdims=True) - exp, np.finfo(np.float64).tiny)
        self._noise = noise.astype(np.float32)
        self._favoured = (np.log(others) + np.log(peak / (1.0 - peak))).astype(np.float32)
        self._device: dict = {}
        self._slot_keys: tuple | None = None  # (request ids, place) -> each slot's first key, kept for the last one

    def __call__(self, inputs: ModelInputs) -> paddle.Tensor:
        place = inputs.row_pos.place
        table, noise, favoured, hash_, mask = self._on(place)
        slot = paddle.clip(inputs.row_slot, min=0)  # padding rows: slot 0's, whatever they predict
        # a row predicts generated token k = position + 1 - prompt length (the last column past the end);
        # its key is (request, k) in the reference table
        k = paddle.clip(paddle.gather(1 - inputs.prompt_lens, slot) + inputs.row_pos, 0, self._width - 1)
        key = paddle.gather(self._first_keys(inputs.request_ids, place), slot) + k
        target = paddle.gather(table, key)
        row = paddle.bitwise_and(key * hash_, mask)
        logits = paddle.gather(noise, row)  # [T, V]: whole noise rows
        boost = paddle.gather_nd(favoured, paddle.stack([row, target], axis=1))
        return logits.put_along_axis_(target.unsqueeze(-1), boost.unsqueeze(-1), axis=1)

    def _first_keys(self, request_ids: list, place) -> paddle.Tensor:
        """int64 ``[B]``: each slot's row of the reference table times its width (the last row, all end tokens,
        for a free slot or a request without a reference); the request ids change only between steps."""
        ids = (tuple(request_ids), str(place))
        if self._slot_keys is None or self._slot_keys[0] != ids:
            rows = [r if r is not None and 0 <= r < self._rows else self._rows for r in request_ids]
            keys = paddle.to_tensor(np.asarray(rows, np.int64) * self._width, place=place)
            self._slot_keys = (ids, keys)
        return self._slot_keys[1]

    def _on(self, place) -> tuple:
        key = str(place)
        if key not in self._device:
            self._device[key] = tuple(
                paddle.to_tensor(a, place=place)
                for a in (
                    self._table,
                    self._noise,
                    self._favoured,
                    np.array([HASH], np.int64),
                    np.array([len(self._noise) - 1], np.int64),
                )
            )
        return self._device[key]

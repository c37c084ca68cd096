"""Log-probabilities of the emitted tokens (``RequestParams.logprobs``): computed on the device from the
rows the sampler drew from, and read with the step's status (``step_status``), with no read of their own.

Semantics: ``fastspec/reference/logprobs.py``. Each emitted token's record is ``1 + w`` int64 keys
(``w = min(TableWidths.logprobs, V)``): the token's own key, then the keys of its row's ``w`` most
likely tokens, most likely first. A key packs a float32 log-probability (exactly) and a token id into
one int64 that orders as (log-probability, then the smaller id), so sorting a record's keys gives
the documented order, and the host decodes the keys it read with nothing else. The packing is
arithmetic (Paddle's static programs have no bit cast): ``-logprob = m * 2^(e - 23)`` with
``2^23 <= m < 2^24`` (a subnormal's ``m`` is its value over ``2^(e - 23)``, an integer too),
coded ``q = (e + 150) * 2^24 + m``; 0 codes 0, and -inf (or NaN, from a NaN logit) the code above
every finite one: it reads back as -inf.
"""

from __future__ import annotations

import numpy as np
import paddle

ID_BITS = 28  # token ids below 2^28
ID_MASK = (1 << ID_BITS) - 1
MANTISSA = 1 << 24
CODE_INF = 1 << 33  # above every finite code ((127 + 150) * 2^24 + m < 2^33)
CODE_TOP = 1 << 34  # key = (CODE_TOP - q) * 2^ID_BITS + (ID_MASK - id): a larger key, a larger log-probability


def const(value, dtype: str) -> paddle.Tensor:
    """A ``[1]`` tensor that broadcasts (``full_like`` would ask a static program's variable for its place)."""
    return paddle.full([1], value, dtype)


def row_logprobs(logits: paddle.Tensor, state, rows: paddle.Tensor) -> paddle.Tensor:
    """float32 ``[T, V]``: log-softmax of each processed row over its request's temperature (the
    sampler's, greedy reading 1). Built from reductions along the row, so a row's values depend on
    that row alone (not on how many rows the step has)."""
    temp = paddle.gather(state.sample_temperature, paddle.clip(rows, min=0))  # as Sampler._probs divides
    scaled = logits / temp.unsqueeze(-1)
    shifted = scaled - paddle.max(scaled, axis=-1, keepdim=True)
    return shifted - paddle.log(paddle.sum(paddle.exp(shifted), axis=-1, keepdim=True))


def keys(logprobs: paddle.Tensor, ids: paddle.Tensor) -> paddle.Tensor:
    """int64 keys of float32 log-probabilities (<= 0 or -inf; NaN counts as -inf) and their token ids."""
    a = -logprobs.astype("float64")  # exact; a >= 0
    finite = paddle.isfinite(a)
    positive = paddle.logical_and(finite, a > 0)
    safe = paddle.where(positive, a, const(1.0, "float64"))
    e = paddle.clip(paddle.floor(paddle.log2(safe)), -149.0, 127.0)
    m = safe * paddle.pow(const(2.0, "float64"), 23.0 - e)  # exact: a power of two
    # float64 log2 of a float32 value is exact enough for the floor; the two fixes make sure of it
    high = m >= MANTISSA
    e, m = paddle.where(high, e + 1, e), paddle.where(high, m * 0.5, m)
    low = paddle.logical_and(m < MANTISSA // 2, e > -149)
    e, m = paddle.where(low, e - 1, e), paddle.where(low, m * 2.0, m)
    q = (e + 150.0) * MANTISSA + m  # an integer below 2^33, exact in float64
    q = paddle.where(positive, q, paddle.where(finite, const(0.0, "float64"), const(CODE_INF, "float64")))
    high = const(CODE_TOP, "int64") - q.astype("int64")
    return high * const(1 << ID_BITS, "int64") + (const(ID_MASK, "int64") - ids.astype("int64"))


def best_of_rows(logp: paddle.Tensor, w: int) -> tuple[paddle.Tensor, paddle.Tensor]:
    """``[T, w]`` values and ids of each row's ``w`` most likely tokens: every token above the ``w``-th
    value, then the smallest ids at it (which tied tokens a top-k keeps is its own affair)."""
    values, ids = paddle.topk(logp, w, axis=-1)
    threshold = values[:, w - 1 :]
    above = paddle.sum((values > threshold).astype("int64"), axis=-1, keepdim=True)
    vocab = int(logp.shape[-1])
    # V - id at the threshold, 0 elsewhere (int32: half the bytes of int64 to write and select from)
    room = paddle.arange(vocab, 0, -1, dtype="int32").unsqueeze(0)
    at = (logp == threshold).astype("int32") * room
    tied = const(vocab, "int64") - paddle.topk(at, w, axis=-1)[0].astype("int64")  # the smallest ids there, ascending
    column = paddle.arange(w, dtype="int64").unsqueeze(0)
    keep = column < above
    fill = paddle.take_along_axis(tied, paddle.clip(column - above, min=0), axis=-1)
    return paddle.where(keep, values, threshold.expand_as(values)), paddle.where(keep, ids, fill)


def step_logprobs(logits: paddle.Tensor, state, rows: paddle.Tensor, width: int) -> paddle.Tensor:
    """int64 ``[B, (K + 1) * (1 + w)]``, ``w = min(width, V)``: for each slot's emitted tokens
    (``accept_tokens[b, j]``, drawn at row ``cu[b] + j``, or at the row of ``accept_nodes[b, j]`` for a
    tree), the token's key and its row's ``w`` best keys. Columns past ``accept_num`` hold whatever the
    clamped row and token give; the host reads only the emitted ones."""
    logp = row_logprobs(logits, state, rows)
    num_rows, vocab = int(logp.shape[0]), int(logp.shape[1])
    best, best_ids = best_of_rows(logp, min(width, vocab))  # [T, w]
    tokens = state.accept_tokens  # [B, K + 1]
    nodes = state.accept_nodes if state.trees else paddle.arange(tokens.shape[1], dtype="int32").unsqueeze(0)
    row = state.cu_seqlens_q_output[:-1].unsqueeze(-1) + paddle.clip(nodes, min=0)
    row = paddle.clip(row.astype("int64"), 0, max(num_rows - 1, 0)).reshape([-1])
    token = paddle.clip(tokens, 0, vocab - 1).reshape([-1])
    chosen = paddle.gather(logp.reshape([-1]), row * vocab + token)
    # the listed ones in key order: equal log-probabilities by id, whatever order top-k left them in
    listed = paddle.sort(keys(paddle.gather(best, row), paddle.gather(best_ids, row)), axis=-1, descending=True)
    record = paddle.concat([keys(chosen, token).unsqueeze(-1), listed], axis=1)
    return record.reshape([state.max_num_seqs, -1])


def decode(record: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Host side: int64 keys -> (float32 log-probabilities, int64 token ids), same shape."""
    record = np.asarray(record, np.int64)
    q = CODE_TOP - (record >> ID_BITS)
    e, m = q // MANTISSA - 150, q % MANTISSA
    value = np.where(q == 0, 0.0, -np.ldexp(m.astype(np.float64), (e - 23).astype(np.int32)))
    value = np.where(q == CODE_INF, -np.inf, value)
    return value.astype(np.float32), ID_MASK - (record & ID_MASK)


def token_logprobs(record: np.ndarray, count: int, n: int) -> list:
    """A slot's ``count`` emitted tokens as ``[(logprob, [(token id, logprob), ...n]), ...]`` from its
    ``[K + 1, 1 + w]`` keys (Python floats: the float32 values exactly)."""
    logp, ids = decode(record[:count])
    return [
        (float(logp[j, 0]), [(int(i), float(p)) for i, p in zip(ids[j, 1 : n + 1], logp[j, 1 : n + 1])])
        for j in range(count)
    ]

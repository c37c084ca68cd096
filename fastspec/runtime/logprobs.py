"""Log-probabilities of the emitted tokens (``RequestParams.logprobs``): computed on the device from the
rows the sampler drew from, and read with the step's status (``step_status``), with no read of their own.

Semantics: ``fastspec/reference/logprobs.py``. Each emitted token's record is ``1 + w`` int64 keys
(``w = min(TableWidths.logprobs, V)``): the token's own key, then the keys of its row's ``w`` most
likely tokens, most likely first; one op writes them all (``emitted_logprobs``, docs/ops/emitted_logprobs.md).
A key packs a float32 log-probability (exactly) and a token id into one int64 that orders as
(log-probability, then the smaller id), so the host decodes the keys it read with nothing else
(the layout: ``fastspec/core/logprob_keys.py``).
"""

from __future__ import annotations

import numpy as np
import paddle

from fastspec import ops
from fastspec.core.logprob_keys import CODE_INF, CODE_TOP, ID_BITS, ID_MASK, MANTISSA


def step_logprobs(logits: paddle.Tensor, state, width: int) -> paddle.Tensor:
    """int64 ``[B, (K + 1) * (1 + w)]``, ``w = min(width, V)``: for each slot's emitted tokens
    (``accept_tokens[b, j]``, drawn at row ``cu[b] + j``, or at the row of ``accept_nodes[b, j]`` for a
    tree), the token's key and its row's ``w`` best keys; 0 past ``accept_num``, which the host does not read.
    Each token's row and temperature come from its slot."""
    keys = ops.emitted_logprobs(
        logits,
        state.sample_temperature,
        state.cu_seqlens_q_output,
        state.accept_tokens,
        state.accept_num,
        state.accept_nodes if state.trees else None,
        width=min(width, int(logits.shape[-1])),
    )
    return keys.reshape([state.max_num_seqs, -1])


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

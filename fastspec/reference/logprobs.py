"""The log-probabilities a request with ``logprobs = n`` gets back (docs/python_api.md, "Log-probabilities").

A token emitted from output row ``t`` comes back with its log-probability under that row's
distribution after penalties, bias, bans, grammar masks and temperature (a greedy request's
temperature reads 1), before min_p, top-k and top-p, and with the ``n`` most likely tokens of the
row and theirs: most likely first, the smaller id first among equal log-probabilities.

``token_logprobs`` states that in float64; ``emitted_logprobs`` is the op that computes it, bit for bit
(docs/ops/emitted_logprobs.md: float32 with the project's exp and log, the records as int64 keys).
"""

from __future__ import annotations

import numpy as np

from fastspec.core.logprob_keys import CODE_INF, CODE_TOP, ID_BITS, ID_MASK, MANTISSA
from fastspec.reference.softmax import (
    F32,
    FLOAT32_MAX,
    FLOAT32_MIN_NORMAL,
    lane_sum,
    softmax_exp,
    softmax_log,
)


def token_logprobs(
    logits: np.ndarray, temperature: np.ndarray, tokens: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Returns ``(chosen [T], top_ids [T, n], top_logprobs [T, n])`` in float64.

    Args:
        logits: float32 ``[T, V]``, the processed rows (what the sampler divides by temperature).
        temperature: ``[T]``, each row's (1 for a greedy request).
        tokens: int ``[T]``, the token each row emitted.
        n: how many of the most likely tokens to list.
    """
    scaled = np.asarray(logits, np.float32) / np.asarray(temperature, np.float32).reshape(
        -1, 1
    )  # float32, as the sampler
    x = scaled.astype(np.float64)
    top = x.max(axis=1, keepdims=True)
    logp = x - top - np.log(np.exp(x - top).sum(axis=1, keepdims=True))
    rows = np.arange(x.shape[0])
    chosen = logp[rows, np.asarray(tokens, np.int64)]
    ids = np.arange(x.shape[1])
    order = np.stack([np.lexsort((ids, -row))[:n] for row in logp]) if len(logp) else np.zeros((0, n), np.int64)
    return chosen, order.astype(np.int64), np.take_along_axis(logp, order, axis=1)


def logprob_keys(logprobs: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """int64 keys of float32 log-probabilities (<= 0 or -inf; NaN reads as -inf) and their token ids
    (fastspec/core/logprob_keys.py)."""
    bits = np.asarray(logprobs, F32).view(np.uint32) & np.uint32(0x7FFFFFFF)  # -logprob
    exponent = (bits >> 23).astype(np.int64)
    mantissa = (bits & 0x7FFFFF).astype(np.int64)
    top = np.frexp(np.maximum(mantissa, 1).astype(np.float64))[1].astype(np.int64) - 1  # floor(log2(mantissa))
    subnormal = (top + 1) * MANTISSA + np.left_shift(mantissa, 23 - top)
    q = np.where(exponent > 0, (exponent + 23) * MANTISSA + (1 << 23) + mantissa, np.where(mantissa > 0, subnormal, 0))
    q = np.where(exponent == 0xFF, CODE_INF, q)
    return (CODE_TOP - q) * (1 << ID_BITS) + (ID_MASK - np.asarray(ids, np.int64))


def record_logprobs(row: np.ndarray, temperature: float, token: int, width: int) -> np.ndarray:
    """One record of ``emitted_logprobs``: the token's key, then the ``width`` best keys (0 past ``V``)."""
    vocab = len(row)
    listed = min(width, vocab)
    record = np.zeros(width + 1, np.int64)
    tau = F32(temperature) if FLOAT32_MIN_NORMAL <= F32(temperature) <= FLOAT32_MAX else F32(1)
    s = (np.asarray(row, F32) / tau).astype(F32)
    m = s.max()
    if np.isnan(row).any() or not np.isfinite(m):  # no log-probabilities: every one -inf
        record[0] = logprob_keys(F32(-np.inf), token)
        record[1 : listed + 1] = logprob_keys(np.full(listed, -np.inf, F32), np.arange(listed))
        return record
    shifted = (s - m).astype(F32)
    log_sum = softmax_log(lane_sum(softmax_exp(shifted)))
    logp = (shifted - log_sum).astype(F32)
    order = np.lexsort((np.arange(vocab), -s))[:listed]  # the larger s, then the smaller id
    record[0] = logprob_keys(logp[token], token)
    record[1 : listed + 1] = logprob_keys(logp[order], order)
    return record


def emitted_logprobs(
    logits: np.ndarray,
    temperature: np.ndarray,
    cu_seqlens_q_output: np.ndarray,
    accept_tokens: np.ndarray,
    accept_num: np.ndarray,
    accept_nodes: np.ndarray | None = None,
    *,
    width: int,
) -> np.ndarray:
    """``logprob_keys [B, K + 1, width + 1]`` int64 (docs/ops/emitted_logprobs.md): slot ``b``'s token ``j``
    (below ``accept_num[b]``) from row ``cu[b] + j`` (``+ accept_nodes[b, j]`` for a tree; the row clamped to
    ``[0, T)``, the token to ``[0, V)``), its key and its row's ``width`` best; 0 everywhere else."""
    logits = np.asarray(logits, F32)
    rows, vocab = logits.shape
    tokens = np.asarray(accept_tokens, np.int64)
    batch, cols = tokens.shape
    temperature = np.asarray(temperature, F32).reshape(-1)
    counts = np.asarray(accept_num).reshape(-1)
    cu = np.asarray(cu_seqlens_q_output, np.int64).reshape(-1)
    keys = np.zeros((batch, cols, width + 1), np.int64)
    with np.errstate(all="ignore"):
        for b in range(batch):
            for j in range(min(int(counts[b]), cols) if rows else 0):
                node = j if accept_nodes is None else max(int(accept_nodes[b, j]), 0)
                row = min(max(int(cu[b]) + node, 0), rows - 1)
                token = min(max(int(tokens[b, j]), 0), vocab - 1)
                keys[b, j] = record_logprobs(logits[row], temperature[b], token, width)
    return keys

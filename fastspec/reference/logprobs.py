"""The log-probabilities a request with ``logprobs = n`` gets back (docs/python_api.md, "Log-probabilities").

A token emitted from output row ``t`` comes back with its log-probability under that row's
distribution after penalties, bias, bans, grammar masks and temperature (a greedy request's
temperature reads 1), before min_p, top-k and top-p, and with the ``n`` most likely tokens of the
row and theirs: most likely first, the smaller id first among equal log-probabilities.
"""

from __future__ import annotations

import numpy as np


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

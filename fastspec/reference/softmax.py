"""Reference ``temperature_softmax``: the rule of docs/ops/temperature_softmax.md, one row at a time.

Every step is a float32 operation rounded on its own, in the order the kernels take
(custom_ops/include/fastspec/temperature_softmax.h): numpy's float32 arithmetic rounds each product
and sum, and never fuses them.
"""

from __future__ import annotations

import numpy as np

F32 = np.float32
LANES = 256  # the row's partial sums: entry v goes to lane v % LANES
EXP_FLOOR = F32(-64.0)  # exp of anything below is 0
LOG2E = F32(1.44269502162933349609375)
ROUND_MAGIC = F32(12582912.0)  # 1.5 * 2^23: (k + m) - m rounds k to an integer, ties to even
LN2_HI, LN2_LO = F32(0.693359375), F32(-2.12194440e-4)
EXP_POLY = tuple(
    F32(c)
    for c in (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1)
)  # c5 .. c0
FLOAT32_MAX = F32(np.finfo(np.float32).max)
FLOAT32_MIN_NORMAL = F32(np.finfo(np.float32).tiny)


def softmax_exp(x: np.ndarray) -> np.ndarray:
    """The op's exp of float32 ``x <= 0``: ``n = round(x log2 e)``, ``r = x - n ln2`` in two steps, a
    polynomial for ``e^r``, times ``2^n``; 0 below ``EXP_FLOOR``."""
    x = np.asarray(x, F32)
    keep = x >= EXP_FLOOR
    x = np.where(keep, x, F32(0))
    n = (x * LOG2E + ROUND_MAGIC) - ROUND_MAGIC
    r = x - n * LN2_HI
    r = r - n * LN2_LO
    p = np.full_like(r, EXP_POLY[0])
    for c in EXP_POLY[1:]:
        p = p * r + c
    y = (p * (r * r) + r) + F32(1)
    scale = ((n.astype(np.int32) + 127) << 23).astype(np.uint32).view(F32)
    return np.where(keep, y * scale, F32(0)).astype(F32)


SQRT_HALF = F32(0.707106781186547524)
LOG_POLY = tuple(
    F32(c)
    for c in (
        7.0376836292e-2,
        -1.1514610310e-1,
        1.1676998740e-1,
        -1.2420140846e-1,
        1.4249322787e-1,
        -1.6668057665e-1,
        2.0000714765e-1,
        -2.4999993993e-1,
        3.3333331174e-1,
    )
)  # c8 .. c0


def softmax_log(x: np.ndarray) -> np.ndarray:
    """The project's log of a positive normal float32 ``x``: ``x = 2^k f`` with ``f`` in ``[sqrt(1/2), sqrt(2))``,
    ``z = f - 1``, ``log f = z - z^2 / 2 + z^3 P(z)``, plus ``k ln2`` in two steps."""
    bits = np.asarray(x, F32).view(np.uint32)
    k = ((bits >> 23) & 0xFF).astype(np.int32) - 126
    f = ((bits & 0x7FFFFF) | np.uint32(126 << 23)).astype(np.uint32).view(F32)  # in [0.5, 1)
    low = f < SQRT_HALF
    k = np.where(low, k - 1, k)
    f = np.where(low, (f + f) - F32(1), f - F32(1)).astype(F32)
    z = f * f
    p = np.full_like(f, LOG_POLY[0])
    for c in LOG_POLY[1:]:
        p = p * f + c
    kf = k.astype(F32)
    y = (p * f) * z
    y = y + kf * LN2_LO
    y = y - F32(0.5) * z
    return ((f + y) + kf * LN2_HI).astype(F32)


def inverse_temperature(temperature: float) -> np.float32:
    t = F32(temperature)
    return F32(1) / t if FLOAT32_MIN_NORMAL <= t <= FLOAT32_MAX else F32(1)


def lane_sum(e: np.ndarray) -> np.float32:
    """The row's sum in the kernels' order: 256 lanes, each adding its entries in order, folded pairwise."""
    padded = np.zeros(-(-len(e) // LANES) * LANES, F32)
    padded[: len(e)] = e
    lanes = np.zeros(LANES, F32)
    for block in padded.reshape(-1, LANES):  # adding a padding 0 leaves a lane's bits as they are
        lanes = lanes + block
    w = LANES // 2
    while w >= 1:
        lanes[:w] = lanes[:w] + lanes[w : 2 * w]
        w //= 2
    return lanes[0]


def softmax_row(logits: np.ndarray, temperature: float) -> np.ndarray:
    """One row's probabilities, or zeros when it has none (a NaN logit, a maximum that is not finite)."""
    row = np.asarray(logits, F32)
    inv_t = inverse_temperature(temperature)
    if np.isnan(row).any():
        return np.zeros_like(row)
    m = F32(row.max() * inv_t)
    if not np.isfinite(m):
        return np.zeros_like(row)
    e = softmax_exp(row * inv_t - m)
    return (e * (F32(1) / lane_sum(e))).astype(F32)


def temperature_softmax(
    logits: np.ndarray, temperature: np.ndarray, batch_id_per_token_output: np.ndarray
) -> np.ndarray:
    """``probs [T, V]`` float32: row ``t`` the softmax of ``logits[t] * (1 / temperature[b])``, ``b`` its request;
    padding rows (``b`` outside ``[0, B)``) all zeros."""
    logits = np.asarray(logits, F32)
    temperature = np.asarray(temperature, F32).reshape(-1)
    ids = np.asarray(batch_id_per_token_output).reshape(-1)
    probs = np.zeros(logits.shape, F32)
    with np.errstate(all="ignore"):
        for t in range(logits.shape[0]):
            b = int(ids[t])
            if 0 <= b < len(temperature):
                probs[t] = softmax_row(logits[t], temperature[b])
    return probs

"""Fixed-point masses, the exact top-p threshold and the draw rule of docs/ops/conventions.md."""

from __future__ import annotations

import numpy as np

MASS_SCALE = 1 << 40
TOPP_ONE = 1 << 24


def prob_valid(probs: np.ndarray) -> np.ndarray:
    """Valid entries: finite and > 0 (computed in f32)."""
    p = np.asarray(probs, dtype=np.float32)
    return np.isfinite(p) & (p > 0)


def prob_mass(probs: np.ndarray) -> np.ndarray:
    """int64 ``floor(min(p, 1) * 2^40)`` for valid entries, 0 otherwise."""
    p = np.asarray(probs, dtype=np.float32)
    valid = prob_valid(p)
    scaled = np.minimum(np.where(valid, p, 0), np.float32(1)).astype(np.float64) * MASS_SCALE
    return np.floor(scaled).astype(np.int64)


def topp_quantum(top_p: float) -> int:
    q = np.float32(top_p)
    if np.isnan(q) or q > 1:
        return TOPP_ONE
    if q <= 0:
        return 1
    return max(1, int(np.rint(np.float64(q) * TOPP_ONE)))  # rint: half to even


def topp_threshold(total_mass: int, top_p: float) -> int:
    """``ceil(total * qi / 2^24)`` with Python's exact integers."""
    return -((-int(total_mass) * topp_quantum(top_p)) // TOPP_ONE)


def minp_quantum(min_p: float) -> int:
    """``round_half_even(q * 2^24)`` with NaN or ``q <= 0`` read as 0 (no cut) and ``q >= 1`` as ``2^24``."""
    q = np.float32(min_p)
    if not q > 0:
        return 0
    if q >= 1:
        return TOPP_ONE
    return int(np.rint(np.float64(q) * TOPP_ONE))  # rint: half to even; 0 up to 2^-25


def minp_threshold(max_mass: int, min_p: float) -> int:
    """The smallest mass min_p keeps in a row whose largest entry has mass ``max_mass``:
    ``ceil(max_mass * qi / 2^24)`` with Python's exact integers (0: every valid entry)."""
    return -((-int(max_mass) * minp_quantum(min_p)) // TOPP_ONE)


def topp_prefix_len(masses_in_order: np.ndarray, total_mass: int, top_p: float) -> int:
    """Length of the shortest non-empty prefix whose mass reaches the threshold, or 0 if none does."""
    thr = topp_threshold(total_mass, top_p)
    cumulative = np.cumsum(np.asarray(masses_in_order, dtype=np.int64))
    hits = np.flatnonzero(cumulative >= thr)
    return int(hits[0]) + 1 if len(hits) else 0


def draw(masses_in_order: np.ndarray, random: int) -> int:
    """Index drawn from an ordered mass set with one rand64 value (first element when the total is 0)."""
    masses = np.asarray(masses_in_order, dtype=np.int64)
    total = int(masses.sum())
    if total == 0:
        return 0
    point = (int(random) * total) >> 64
    return int(np.searchsorted(np.cumsum(masses), point, side="right"))


def probability_order(probs: np.ndarray) -> np.ndarray:
    """Token ids by f32 probability descending, ties by id ascending (invalid entries excluded)."""
    p = np.asarray(probs, dtype=np.float32)
    ids = np.flatnonzero(prob_valid(p))
    return ids[np.lexsort((ids, -p[ids].astype(np.float64)))]

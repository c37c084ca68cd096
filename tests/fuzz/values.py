"""Adversarial per-slot values: what a hostile caller puts in a well-formed call.

The shapes and dtypes stay valid (the schema accepts the call); the values do not: the
ends of int64 and int32, 0 and -1, sizes just past a row (``L``, ``K + 1``, ``T``, ``V``
and their neighbours), NaN, infinities, negative zero, subnormals and probabilities
above 1 (as float32, float16 and bfloat16 bit patterns).
"""

from __future__ import annotations

import numpy as np

from fastspec.arrays import read_array
from fastspec.core.schema import SCHEMAS
from fastspec.core.validate import validate

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

INT64_EXTREMES = (
    INT64_MIN,
    INT64_MIN + 1,
    -(2**62),
    -(2**32),
    INT32_MIN - 1,
    INT32_MIN,
    -2,
    -1,
    0,
    1,
    2,
    INT32_MAX,
    INT32_MAX + 1,
    2**32,
    2**62,
    INT64_MAX - 1,
    INT64_MAX,
)
INT32_EXTREMES = (INT32_MIN, INT32_MIN + 1, -(2**30), -2, -1, 0, 1, 2, 2**30, INT32_MAX - 1, INT32_MAX)
_RANGES = {"int64": (INT64_MIN, INT64_MAX), "int32": (INT32_MIN, INT32_MAX)}

F32_SPECIALS = np.array(
    [
        np.nan,
        -np.nan,
        np.inf,
        -np.inf,
        -0.0,
        0.0,
        -1.0,
        1.0,
        1.0000001,
        2.0,
        3.4e38,
        1e-45,
        1.1754942e-38,
        2.0**-40,
        2.0**-41,
        1e-6,
        0.5,
        0.9999999,
    ],
    np.float32,
)
# float16 / bfloat16 bit patterns: +-inf, quiet and signalling NaN, a negative NaN, -0, the smallest
# and largest subnormal, the largest finite value, 1, the next value after 1, -1.
F16_SPECIAL_BITS = np.array(
    [0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFFFF, 0x8000, 0x0001, 0x03FF, 0x7BFF, 0x3C00, 0x3C01, 0xBC00], np.uint16
)
BF16_SPECIAL_BITS = np.array(
    [0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0xFFFF, 0x8000, 0x0001, 0x007F, 0x7F7F, 0x3F80, 0x3F81, 0xBF80], np.uint16
)


def case_dims(case) -> dict[str, int]:
    """The shape symbols (B, L, K, T, V, E, Kc) and int attributes of a well-formed case."""
    op = SCHEMAS[case.op]
    metas = {
        t.name: None if case.arrays.get(t.name) is None else read_array(op, t, case.arrays[t.name]).meta
        for t in op.tensors
    }
    return validate(op, metas, case.attrs).dims


def near_sizes(dims: dict[str, int]) -> list[int]:
    """Every bound size and its neighbours: the values just inside and just past a row."""
    return sorted({d + delta for d in dims.values() for delta in (-1, 0, 1, 2)})


def int_values(rng: np.random.Generator, dtype: str, dims: dict[str, int], count: int) -> np.ndarray:
    """``count`` adversarial values of an integer dtype: half its ends, a third the sizes near a
    bound dimension, the rest just inside the ends or around 0."""
    lo, hi = _RANGES[dtype]
    groups = (
        INT64_EXTREMES if dtype == "int64" else INT32_EXTREMES,
        near_sizes(dims) or [0],
        [v + d for v in (lo, hi, 0) for d in (-3, -2, 2, 3)],
    )
    pools = [np.array([min(max(v, lo), hi) for v in group], dtype=dtype) for group in groups]
    which = np.searchsorted([0.5, 0.85], rng.random(count), side="right")
    return np.choose(which, [rng.choice(pool, count) for pool in pools]).astype(dtype)


def _positions(rng: np.random.Generator, size: int) -> np.ndarray:
    roll = rng.random()
    if roll < 0.5:
        return rng.integers(0, size, 1)
    if roll < 0.8:
        return rng.integers(0, size, min(size, int(rng.integers(2, 5))))
    return np.arange(size)


def poke(rng: np.random.Generator, array: np.ndarray, dims: dict[str, int]) -> None:
    """Overwrites a few entries of ``array`` (or all of them) in place with adversarial values.
    A ``uint16`` array is bfloat16 bits (fastspec.arrays' convention)."""
    flat = array.reshape(-1)
    if flat.size == 0:
        return
    where = _positions(rng, flat.size)
    kind = str(array.dtype)
    if kind in _RANGES:
        flat[where] = int_values(rng, kind, dims, len(where))
    elif kind == "bool":
        flat[where] = ~flat[where]
    elif kind == "float32":
        flat[where] = rng.choice(F32_SPECIALS, len(where))
    elif kind == "float16":
        flat.view(np.uint16)[where] = rng.choice(F16_SPECIAL_BITS, len(where))
    elif kind == "uint16":
        flat[where] = rng.choice(BF16_SPECIAL_BITS, len(where))
    else:
        raise TypeError(f"no adversarial values for {kind}")


def adversarial(rng: np.random.Generator, case) -> list[str]:
    """Pokes adversarial values into one to three input arrays of a well-formed case; returns their names."""
    dims = case_dims(case)
    dims.update({k: v for k, v in case.attrs.items() if isinstance(v, int) and not isinstance(v, bool)})
    op = SCHEMAS[case.op]
    names = [t.name for t in op.inputs if isinstance(case.arrays.get(t.name), np.ndarray)]
    chosen = rng.choice(names, size=min(len(names), int(rng.integers(1, 4))), replace=False)
    for name in chosen:
        poke(rng, case.arrays[name], dims)
    return [str(n) for n in chosen]

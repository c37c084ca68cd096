"""Calls broken on purpose, derived from the op schemas: each one must be refused with
``FastspecArgumentError`` (or its ``FastspecTypeError``) before any kernel runs.

One break per case: a wrong dtype, a wrong rank, a required tensor left out, a size that
disagrees with another tensor (or leaves its symbol's range: ``E = 0``, ``V = 0``), a strided
view, a Python list for an array, an attribute out of its range, of the wrong type, unknown
or missing, mixed probability dtypes, a bad backend or XPU grid. A break is only made where
the schema says the result is invalid (a size only one tensor has may change freely).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from fastspec.core.schema import SCHEMAS, Attr, OpSchema, Tensor
from fastspec.reference.sampling import as_f32_probs
from tests.helpers.sampling_cases import to_bf16_bits

from .case import Case, strided_view
from .values import INT32_MAX, INT32_MIN, case_dims

_DTYPES = ("int32", "int64", "float32", "float64", "float16", "bool", "uint8", "int16")
_PROB_DTYPES = ("float32", "float16", "uint16")  # uint16: bfloat16 bits


def _strategy(case: Case) -> str | None:
    value = case.attrs.get("strategy")
    return None if value is None else str(getattr(value, "value", value)).lower()


def _used(op: OpSchema, case: Case) -> list[Tensor]:
    strategy = _strategy(case)
    return [t for t in op.tensors if t.used_by(strategy) and isinstance(case.arrays.get(t.name), np.ndarray)]


def _symbol_users(op: OpSchema, case: Case) -> dict[str, int]:
    """How many used tensor axes (and int attributes) carry each symbol."""
    count: dict[str, int] = {a.name: 1 for a in op.attrs if a.kind == "int"}
    for t in _used(op, case):
        for dim in _layout(t, case.arrays[t.name]):
            if dim.symbol:
                count[dim.symbol] = count.get(dim.symbol, 0) + 1
    return count


def _layout(t: Tensor, array: np.ndarray):
    return next(alt for alt in t.shapes if len(alt) == array.ndim)


def _breaks(op: OpSchema, case: Case, dims: dict[str, int]) -> list[tuple[str, Callable[[], None]]]:
    """Every applicable break of this case: (what, apply)."""
    arrays, attrs, strategy = case.arrays, case.attrs, _strategy(case)
    out: list[tuple[str, Callable[[], None]]] = []

    def put(name, value):
        return lambda: arrays.__setitem__(name, value)

    users = _symbol_users(op, case)
    for t in _used(op, case):
        a = arrays[t.name]
        for dtype in _DTYPES:
            if dtype not in t.dtypes and not (dtype == "uint16" and "bfloat16" in t.dtypes):
                out.append((f"dtype {t.name} {dtype}", put(t.name, a.astype(dtype))))
        out.append((f"rank {t.name}", put(t.name, np.ascontiguousarray(a[..., None, None]))))
        out.append((f"list {t.name}", put(t.name, a.tolist())))
        if a.shape and a.shape[0] >= 2 and a.size > 0:  # an empty array has no layout to get wrong
            out.append((f"strided {t.name}", put(t.name, strided_view(a))))
        if t.required_by(strategy) and not t.output:
            out.append((f"none {t.name}", put(t.name, None)))
        for axis, dim in enumerate(_layout(t, a)):
            for size in {a.shape[axis] + 1, max(a.shape[axis] - 1, 0), 0} - {a.shape[axis]}:
                if _size_is_invalid(op, dim, size, users):
                    shape = list(a.shape)
                    shape[axis] = size
                    out.append((f"size {t.name} axis {axis} = {size}", put(t.name, np.resize(a, shape))))
    for attr in op.attrs:
        for value in _bad_values(attr, dims):
            out.append((f"attr {attr.name} = {value!r}", put_attr(attrs, attr.name, value)))
        if attr.required:
            out.append((f"attr {attr.name} missing", lambda n=attr.name: attrs.pop(n, None)))
    out.append(("attr unknown", put_attr(attrs, "no_such_attribute", 1)))
    probs = [t.name for t in _used(op, case) if len(t.dtypes) > 1]
    if len(probs) > 1:
        other = next(d for d in _PROB_DTYPES if d != str(arrays[probs[1]].dtype))
        out.append((f"mixed dtypes {probs[1]} {other}", put(probs[1], _as_probs(arrays[probs[1]], other))))
    out.append(("backend 'tpu'", lambda: case.options.__setitem__("backend", "tpu")))
    for grid in ((0, 64), (1, 65), (256, 1), (1,)):
        out.append((f"xpu_grid {grid}", lambda g=grid: case.options.__setitem__("xpu_grid", g)))
    return out


def put_attr(attrs: dict, name: str, value) -> Callable[[], None]:
    return lambda: attrs.__setitem__(name, value)


def _size_is_invalid(op: OpSchema, dim, size: int, users: dict[str, int]) -> bool:
    if dim.symbol is None:
        return True  # a literal size (the 1 of [B, 1])
    if users.get(dim.symbol, 0) >= 2:
        return True  # another tensor (or an attribute) fixes this size
    lo, hi = op.symbol_ranges.get(dim.symbol, (None, None))
    value = size - dim.offset
    return (lo is not None and value < lo) or (hi is not None and value > hi)


def _bad_values(attr: Attr, dims: dict[str, int]) -> list:
    if attr.kind == "bool":
        return [1, "yes"]
    if attr.kind == "str":
        return ["no_such_strategy", 3]
    if attr.choices:
        return [v for v in (0, 2, 3, -1) if v not in attr.choices] + ["1"]
    lo, hi = _bound(attr.lo, dims), _bound(attr.hi, dims)
    candidates = [INT32_MIN - 1, INT32_MAX + 1, -(2**63), 2**63 - 1, 2**64]
    candidates += [lo - 1] if lo is not None else []
    candidates += [hi + 1] if hi is not None else []
    out = [v for v in candidates if (lo is not None and v < lo) or (hi is not None and v > hi)]
    return out + [2.5, True, None]


def _bound(expr, dims: dict[str, int]) -> int | None:
    """An attribute bound of the schema (an int or an expression over the symbols and attributes)."""
    if expr is None or isinstance(expr, int):
        return expr
    return int(eval(expr, {"__builtins__": {}, "min": min, "max": max}, dims))  # noqa: S307 (our schema)


def _as_probs(array: np.ndarray, dtype: str) -> np.ndarray:
    """Probabilities (float32, float16 or bfloat16 bits) in another of those dtypes."""
    as_f32 = as_f32_probs(array)
    return to_bf16_bits(as_f32) if dtype == "uint16" else as_f32.astype(dtype)


def malform(rng: np.random.Generator, case: Case) -> str:
    """Breaks one thing of a well-formed case, in place; returns what."""
    op = SCHEMAS[case.op]
    with np.errstate(all="ignore"):  # a wrong dtype may not hold the values: that is not the point
        breaks = _breaks(op, case, case_dims(case))
    what, apply = breaks[int(rng.integers(0, len(breaks)))]
    apply()
    return what

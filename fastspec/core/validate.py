"""The argument checks of every op, for every front end, from the op's schema.

A front end describes each tensor it was given as a :class:`TensorMeta` (dtype,
shape, contiguity, device) and calls :func:`validate`; every rule of
``fastspec.core.schema`` is checked here and only here. The result tells the front
end the bound shape symbols, the normalised attributes and the device to run
on. Framework-free: no Paddle, no numpy.
"""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass
from typing import Any, Mapping

from fastspec.core.refusals import Refusal, error
from fastspec.core.schema import Attr, Dim, OpSchema, Tensor

UNKNOWN = -1  # a dimension a static graph has not fixed yet: not checked


@dataclass(frozen=True)
class TensorMeta:
    """What the checks need to know of a tensor. ``device``: "cpu", "cuda:0", "xpu:1", ..."""

    dtype: str
    shape: tuple[int, ...]
    contiguous: bool = True
    device: str = "cpu"


@dataclass(frozen=True)
class Checked:
    """A call that passed every check."""

    dims: dict[str, int]  # bound shape symbols, and the int attributes that size outputs (absent: only UNKNOWN seen)
    attrs: dict[str, Any]  # every attribute, defaults filled in, strategy lower-cased
    used: tuple[str, ...]  # the tensors the call reads or writes, in schema order
    device: str  # the common device of the tensors ("cpu" when none was given)

    @property
    def backend(self) -> str:
        return self.device.split(":")[0]


def _check_attr(op: OpSchema, attr: Attr, value: Any) -> Any:
    """Type and choice checks of one attribute; returns the normalised value."""
    if attr.kind == "str" and isinstance(value, enum.Enum):
        value = value.value
    wrong = {
        "int": not isinstance(value, int) or isinstance(value, bool),
        "bool": not isinstance(value, bool),
        "str": not isinstance(value, str),
    }.get(attr.kind, False)
    if wrong:
        raise error(op, Refusal("attr_type", attr.name, type(value).__name__, {"kind": attr.kind}))
    value = int(value) if attr.kind == "int" else value.lower() if attr.kind == "str" else value
    if attr.choices and value not in attr.choices:
        raise error(op, Refusal("choice", attr.name, value))
    return value


def _bound(expr: int | str | None, names: Mapping[str, int]) -> int | None:
    """An attribute bound; None when it depends on a symbol not bound yet."""
    if expr is None or isinstance(expr, int):
        return expr
    try:
        return int(eval(_compiled(expr), {"__builtins__": {}, "min": min, "max": max}, names))  # noqa: S307 (our schema)
    except NameError:
        return None


@functools.cache
def _compiled(expr: str) -> Any:
    return compile(expr, "<schema bound>", "eval")


class _Binder:
    """Binds shape symbols in argument order and checks every later use."""

    def __init__(self, op: OpSchema):
        self.op = op
        self.dims: dict[str, int] = {}
        self.source: dict[str, str] = {}  # the tensor or attribute that bound each symbol

    def match(self, tensor: Tensor, meta: TensorMeta) -> None:
        fits = [
            alt
            for alt in tensor.shapes
            if len(alt) == len(meta.shape)
            and all(d.symbol is not None or meta.shape[i] in (UNKNOWN, d.offset) for i, d in enumerate(alt))
        ]
        if not fits:
            raise error(self.op, Refusal("shape", tensor.name, list(meta.shape)))
        for axis, dim in enumerate(fits[0]):
            self._bind(tensor, axis, dim, meta.shape[axis])

    def _bind(self, tensor: Tensor, axis: int, dim: Dim, size: int) -> None:
        if dim.symbol is None or size == UNKNOWN:
            return
        value = size - dim.offset
        bound = self.dims.get(dim.symbol)
        if bound is None:
            self.dims[dim.symbol] = value
            self.source[dim.symbol] = tensor.name
        elif bound != value:
            raise error(
                self.op,
                Refusal(
                    "size",
                    tensor.name,
                    size,
                    {
                        "axis": axis,
                        "symbol": dim.symbol,
                        "offset": dim.offset,
                        "expected": bound + dim.offset,
                        "source": self.source[dim.symbol],
                    },
                ),
            )


def validate(op: OpSchema, tensors: Mapping[str, TensorMeta | None], attrs: Mapping[str, Any]) -> Checked:
    """Checks one call of ``op``; raises :class:`FastspecArgumentError` naming the op and the argument.

    ``tensors`` maps every tensor name of the schema (inputs and outputs) to its
    metadata or None; ``attrs`` maps attribute names to the given values (missing
    ones take their defaults).
    """
    unknown = set(attrs) - set(op.attr_names)
    if unknown:
        raise error(op, Refusal("unknown_attrs", actual=sorted(unknown)))
    values: dict[str, Any] = {}
    for attr in op.attrs:
        if attr.name not in attrs:
            if attr.required:
                raise error(op, Refusal("attr_required", attr.name))
            values[attr.name] = attr.default
        else:
            values[attr.name] = _check_attr(op, attr, attrs[attr.name])
    strategy = values.get(op.strategy_attr) if op.strategy_attr else None

    binder = _Binder(op)
    for attr in op.attrs:  # an int attribute may size an output ("[T, max_candidate_len]")
        if attr.kind == "int":
            binder.dims[attr.name], binder.source[attr.name] = values[attr.name], attr.name
    used, devices, dtype_of = [], {}, {}
    for tensor in op.tensors:
        meta = tensors.get(tensor.name)
        if meta is None:
            if tensor.required_by(strategy) and not tensor.output:
                raise error(op, Refusal("required", tensor.name, facts={"strategy": tensor.needed_by and strategy}))
            continue
        if not tensor.used_by(strategy):
            continue  # a tensor this strategy does not read: ignored
        if not isinstance(meta, TensorMeta):
            raise error(op, Refusal("not_tensor", tensor.name, type(meta).__name__, {"expected": "a tensor"}))
        if meta.dtype not in tensor.dtypes:
            raise error(op, Refusal("dtype", tensor.name, meta.dtype))
        group = tensor.dtypes if len(tensor.dtypes) > 1 else None
        if group is not None:  # tensors that accept several dtypes must agree on one
            first = dtype_of.setdefault(group, (tensor.name, meta.dtype))
            if first[1] != meta.dtype:
                raise error(
                    op, Refusal("same_dtype", tensor.name, meta.dtype, {"other": first[0], "expected": first[1]})
                )
        if not meta.contiguous:
            raise error(op, Refusal("strided", tensor.name))
        binder.match(tensor, meta)
        devices.setdefault(meta.device, tensor.name)
        used.append(tensor.name)

    if len(devices) > 1:
        (first_device, first), (device, name) = list(devices.items())[:2]
        raise error(op, Refusal("device", name, device, {"other": first, "other_device": first_device}))
    device = next(iter(devices), "cpu")

    for symbol, (lo, hi) in op.symbol_ranges.items():
        value = binder.dims.get(symbol)
        if value is None:
            continue
        if lo is not None and value < lo or hi is not None and value > hi:
            raise error(
                op, Refusal("symbol_range", actual=value, facts={"symbol": symbol, "source": binder.source[symbol]})
            )

    names = {**binder.dims, **values}  # the symbols and attributes a bound expression may name
    for attr in op.attrs:
        value = values[attr.name]
        if attr.kind != "int":
            continue
        lo, hi = _bound(attr.lo, names), _bound(attr.hi, names)
        if lo is not None and value < lo or hi is not None and value > hi:
            raise error(op, Refusal("attr_range", attr.name, value, {"lo": lo, "hi": hi}))

    backend = device.split(":")[0]
    for symbol, limit in op.device_limits.get(backend, {}).items():
        value = binder.dims.get(symbol)
        if value is not None and value > limit:
            raise error(
                op,
                Refusal(
                    "limit", actual=value, facts={"symbol": symbol, "source": binder.source[symbol], "backend": backend}
                ),
            )
    return Checked(binder.dims, values, tuple(used), device)

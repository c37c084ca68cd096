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

from fastspec.core.errors import FastspecArgumentError, FastspecTypeError
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


def _fail(op: OpSchema, what: str) -> FastspecArgumentError:
    return FastspecArgumentError(f"{op.name}: {what}")


def _shape_text(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join("?" if d == UNKNOWN else str(d) for d in shape) + "]"


def _alternatives(tensor: Tensor) -> str:
    return " or ".join("[" + ", ".join(map(str, alt)) + "]" for alt in tensor.shapes)


def _check_attr(op: OpSchema, attr: Attr, value: Any) -> Any:
    """Type and choice checks of one attribute; returns the normalised value."""
    if attr.kind == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            raise FastspecTypeError(f"{op.name}: attribute '{attr.name}' must be an int, got {type(value).__name__}")
        value = int(value)
    elif attr.kind == "bool":
        if not isinstance(value, bool):
            raise FastspecTypeError(f"{op.name}: attribute '{attr.name}' must be a bool, got {type(value).__name__}")
    elif attr.kind == "str":
        if isinstance(value, enum.Enum):
            value = value.value
        if not isinstance(value, str):
            raise FastspecTypeError(f"{op.name}: attribute '{attr.name}' must be a str, got {type(value).__name__}")
        value = value.lower()
    if attr.choices and value not in attr.choices:
        allowed = ", ".join(repr(c) for c in attr.choices)
        raise _fail(op, f"attribute '{attr.name}' must be one of {allowed}, got {value!r}")
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
        self.source: dict[str, str] = {}

    def match(self, tensor: Tensor, meta: TensorMeta) -> None:
        fits = [alt for alt in tensor.shapes if len(alt) == len(meta.shape)
                and all(d.symbol is not None or meta.shape[i] in (UNKNOWN, d.offset) for i, d in enumerate(alt))]
        if not fits:
            raise _fail(self.op, f"argument '{tensor.name}' must have shape {_alternatives(tensor)}, "
                                 f"got {_shape_text(meta.shape)}")
        for axis, dim in enumerate(fits[0]):
            self._bind(tensor, axis, dim, meta.shape[axis])

    def _bind(self, tensor: Tensor, axis: int, dim: Dim, size: int) -> None:
        if dim.symbol is None or size == UNKNOWN:
            return
        value = size - dim.offset
        bound = self.dims.get(dim.symbol)
        if bound is None:
            self.dims[dim.symbol] = value
            self.source[dim.symbol] = f"'{tensor.name}'"
        elif bound != value:
            which = "rows" if axis == 0 else "columns" if axis == 1 else f"entries on axis {axis}"
            raise _fail(self.op, f"argument '{tensor.name}' has {size} {which}, expected {dim} = "
                                 f"{bound + dim.offset} (from {self.source[dim.symbol]})")


def validate(op: OpSchema, tensors: Mapping[str, TensorMeta | None], attrs: Mapping[str, Any]) -> Checked:
    """Checks one call of ``op``; raises :class:`FastspecArgumentError` naming the op and the argument.

    ``tensors`` maps every tensor name of the schema (inputs and outputs) to its
    metadata or None; ``attrs`` maps attribute names to the given values (missing
    ones take their defaults).
    """
    unknown = set(attrs) - set(op.attr_names)
    if unknown:
        raise FastspecTypeError(f"{op.name}: unknown attribute(s) {sorted(unknown)}; it takes {list(op.attr_names)}")
    values: dict[str, Any] = {}
    for attr in op.attrs:
        if attr.name not in attrs:
            if attr.required:
                raise FastspecTypeError(f"{op.name}: attribute '{attr.name}' is required")
            values[attr.name] = attr.default
        else:
            values[attr.name] = _check_attr(op, attr, attrs[attr.name])
    strategy = values.get(op.strategy_attr) if op.strategy_attr else None

    binder = _Binder(op)
    for attr in op.attrs:  # an int attribute may size an output ("[T, max_candidate_len]")
        if attr.kind == "int":
            binder.dims[attr.name], binder.source[attr.name] = values[attr.name], f"attribute '{attr.name}'"
    used, devices, dtype_of = [], {}, {}
    for tensor in op.tensors:
        meta = tensors.get(tensor.name)
        if meta is None:
            if tensor.required_by(strategy) and not tensor.output:
                need = f" by strategy '{strategy}'" if tensor.needed_by else ""
                raise _fail(op, f"argument '{tensor.name}' is required{need}, got None")
            continue
        if not tensor.used_by(strategy):
            continue  # a tensor this strategy does not read: ignored
        if not isinstance(meta, TensorMeta):
            raise FastspecTypeError(f"{op.name}: argument '{tensor.name}' must be a tensor, got {type(meta).__name__}")
        if meta.dtype not in tensor.dtypes:
            raise _fail(op, f"argument '{tensor.name}' must be {' or '.join(tensor.dtypes)}, got {meta.dtype}")
        group = tensor.dtypes if len(tensor.dtypes) > 1 else None
        if group is not None:  # tensors that accept several dtypes must agree on one
            first = dtype_of.setdefault(group, (tensor.name, meta.dtype))
            if first[1] != meta.dtype:
                raise _fail(op, f"argument '{tensor.name}' must have the dtype of '{first[0]}' ({first[1]}), "
                                f"got {meta.dtype}")
        if not meta.contiguous:
            raise _fail(op, f"argument '{tensor.name}' is a strided (non-contiguous) view; pass a contiguous "
                            "tensor (an op cannot write through a view, and reading one would need a copy)")
        binder.match(tensor, meta)
        devices.setdefault(meta.device, tensor.name)
        used.append(tensor.name)

    if len(devices) > 1:
        (first_device, first), (device, name) = list(devices.items())[:2]
        raise _fail(op, f"argument '{name}' is on {device} but '{first}' is on {first_device}; "
                        "every tensor of a call must be on one device")
    device = next(iter(devices), "cpu")

    for symbol, (lo, hi) in op.symbol_ranges.items():
        value = binder.dims.get(symbol)
        if value is None:
            continue
        if lo is not None and value < lo or hi is not None and value > hi:
            rule = f">= {lo}" if hi is None else f"in [{lo if lo is not None else '-inf'}, {hi}]"
            raise _fail(op, f"argument {binder.source[symbol]} gives {symbol} = {value}, which must be {rule}")

    names = {**binder.dims, **values}  # the symbols and attributes a bound expression may name
    for attr in op.attrs:
        value = values[attr.name]
        if attr.kind != "int":
            continue
        lo, hi = _bound(attr.lo, names), _bound(attr.hi, names)
        if lo is not None and value < lo or hi is not None and value > hi:
            text = lambda b, x: str(x) if isinstance(b, int) or x is None else f"{b} = {x}"  # noqa: E731
            raise _fail(op, f"attribute '{attr.name}' must be in [{text(attr.lo, lo)}, {text(attr.hi, hi)}], "
                            f"got {value}")

    backend = device.split(":")[0]
    for symbol, limit in op.device_limits.get(backend, {}).items():
        value = binder.dims.get(symbol)
        if value is not None and value > limit:
            what = "batch " if symbol == "B" else ""
            raise _fail(op, f"{what}{symbol} = {value} (from {binder.source[symbol]}) exceeds the "
                            f"{backend.upper()} limit of {limit}")
    return Checked(binder.dims, values, tuple(used), device)

"""Each op's example call (:mod:`fastspec.core.examples`) written out as Python: the example of the op's
docstring and of docs/ops/examples.md, where ``tools/op_examples.py`` adds what the reference returns.

Every tensor the call's strategy reads is passed by keyword as ``T(<nested list>, dtype=...)``, so the
same lines run on both front ends: ``T = np.array`` for :mod:`fastspec.arrays`, ``T = paddle.to_tensor``
for :mod:`fastspec.ops`.
"""

from __future__ import annotations

import functools

import numpy as np

from fastspec.core.examples import example_call
from fastspec.core.schema import SCHEMAS

ARRAYS_SETUP = ">>> import numpy as np, fastspec.arrays as fs; T = np.array"
PADDLE_SETUP = ">>> import paddle, fastspec.ops as fs; T = paddle.to_tensor"
_REPEAT_FROM = 4  # a list of this many equal items or more is written ``[item] * n``


def _scalar(value: np.generic) -> str:
    if value.dtype.kind == "f":
        return str(value) if np.isfinite(value) else f"float('{value}')"  # str: the shortest float32 digits
    return repr(value.item())


def _nested(value: np.ndarray) -> str:
    if value.ndim == 0:
        return _scalar(value[()])
    items = [_nested(item) for item in value]
    if len(items) >= _REPEAT_FROM and len(set(items)) == 1:
        return f"[{items[0]}] * {len(items)}"
    return "[" + ", ".join(items) + "]"


def literal(value: np.ndarray) -> str:
    """``value`` as a call of ``T`` (its dtype named but for bool, the default of both front ends)."""
    if value.dtype == np.bool_:
        return f"T({_nested(value)})"
    return f"T({_nested(value)}, dtype='{value.dtype.name}')"


@functools.cache
def call_lines(op_name: str) -> tuple[str, ...]:
    """``>>> result = fs.<op>(...)``: the op's example call, one argument a line."""
    op = SCHEMAS[op_name]
    arrays, attrs = example_call(op_name)
    strategy = attrs.get(op.strategy_attr) if op.strategy_attr else None
    args = [f"{t.name}={literal(arrays[t.name])}" for t in op.inputs if t.name in arrays and t.used_by(strategy)]
    args += [f"{name}={value!r}" for name, value in attrs.items()]
    return (f">>> result = fs.{op_name}(", *(f"...     {arg}," for arg in args[:-1]), f"...     {args[-1]})")


def result_expressions(op_name: str) -> list[str]:
    """What shows the call's result: ``result.tolist()``, or ``result.<name>.tolist()`` per returned tensor."""
    returns = SCHEMAS[op_name].returns
    return ["result.tolist()"] if len(returns) == 1 else [f"result.{name}.tolist()" for name in returns]

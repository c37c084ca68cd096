"""The reference's results of an op call given by the schema's names, as ``fastspec check`` and the example
page (``tools/op_examples.py``) compare them with the front ends'."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from fastspec import reference as ref
from fastspec.core.schema import SCHEMAS

# attributes the reference names otherwise (sample_tokens' random stream)
REFERENCE_ATTR_NAMES = {"rand_stream": "stream"}


def result_names(op_name: str, given: Any) -> list[str]:
    """What a call changes, in the reference's order: the in-place tensors ``given``, then the new outputs."""
    op = SCHEMAS[op_name]
    return [t.name for t in op.inputs if t.inplace and t.name in given] + list(op.output_names)


def reference_results(op_name: str, arrays: dict[str, np.ndarray], attrs: dict[str, Any]) -> tuple[np.ndarray, ...]:
    """The reference's results of a call of ``op_name`` (``result_names``' order): its function of the op's name,
    given the tensors the call's strategy reads by name (the rest as None) and the attributes by name; a
    reference that takes its tensors positionally (``*arrays``) gets the others in schema order."""
    op = SCHEMAS[op_name]
    strategy = attrs.get(op.strategy_attr) if op.strategy_attr else None
    tensors = {t.name: arrays.get(t.name) if t.used_by(strategy) else None for t in op.inputs}
    function = getattr(ref, op_name)
    params = inspect.signature(function).parameters
    named = {name: value for name, value in tensors.items() if name in params}
    positional = [value for name, value in tensors.items() if name not in params]
    if not any(p.kind is p.VAR_POSITIONAL for p in params.values()):
        positional = []
    given = {REFERENCE_ATTR_NAMES.get(name, name): value for name, value in attrs.items()}
    result = function(*positional, **named, **given)
    return result if isinstance(result, tuple) else (result,)

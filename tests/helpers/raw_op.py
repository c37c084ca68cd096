"""Runs a Paddle op without its Python checks, to test the run-time guard of the C++ side."""

from __future__ import annotations

from typing import Any

from fastspec.core.schema import SCHEMAS
from fastspec.ops._library import run_op


def raw_op(name: str, tensors: dict[str, Any], attrs: dict[str, Any]) -> dict[str, Any]:
    """``fastspec_<name>`` on ``tensors`` (by name; missing ones None) and ``attrs`` (missing ones take
    their defaults), straight into the op library: only the C++ guard checks them."""
    op = SCHEMAS[name]
    inputs = {t.name: tensors.get(t.name) for t in op.inputs}
    values = [attrs.get(a.name, a.default) for a in op.attrs]
    return run_op(op, inputs, values)

"""Every refusal of an op call, worded in one place.

A check that refuses a call says which rule failed as a :class:`Refusal` (the rule, the argument,
what it got and what the rule wanted): :mod:`fastspec.core.validate` in Python, and at run time
the generated Paddle guard (``custom_ops/paddle/guard.h``) and the bindings' tree check, which
write it as one JSON line under their message (``fastspec-refusal: {...}``). :func:`error`
words a refusal with the op's schema, so a call refused by native code gets the words of one
refused in Python, and nothing checks a call again to explain it. Pure Python.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from fastspec.core.errors import FastspecArgumentError, FastspecTypeError
from fastspec.core.schema import Dim, OpSchema

NATIVE_MARK = "fastspec-refusal: "  # the native checks' record, after their own message
_TYPE_RULES = ("attr_type", "not_tensor", "unknown_attrs", "attr_required", "not_integer")  # FastspecTypeError
_AXES = {0: "rows", 1: "columns"}


@dataclass(frozen=True)
class Refusal:
    """Which rule refused a call. ``argument``: the tensor or attribute; ``actual``: what was given;
    ``facts``: what else the rule's words need (an axis, the symbol and where it was bound, ...)."""

    rule: str
    argument: str = ""
    actual: Any = None
    facts: dict[str, Any] = field(default_factory=dict)


def _source(op: OpSchema, name: str) -> str:
    return f"attribute '{name}'" if name in op.attr_names else f"'{name}'"


def _shape_text(shape: Any) -> str:
    return "[" + ", ".join("?" if d < 0 else str(d) for d in shape) + "]"


def _bound_text(expr: int | str | None, value: int | None) -> str:
    return str(value) if isinstance(expr, int) or value is None else f"{expr} = {value}"


def _range_text(lo: int | None, hi: int | None) -> str:
    return f">= {lo}" if hi is None else f"in [{lo if lo is not None else '-inf'}, {hi}]"


def _words(op: OpSchema | None, r: Refusal) -> str:
    """The words of ``r``; ``op``: the schema of an op's call (None for the rules of other calls, below)."""
    a, f = r.argument, r.facts
    if r.rule == "token_id":
        return f"{a} holds token id {r.actual}, expected ids in [0, {f['high']}]"
    if r.rule == "int_range":
        return f"{a} must be in [{f['lo']}, {f['hi']}], got {r.actual}"
    if r.rule == "not_integer":
        return f"{a} must be an integer, got {r.actual}"
    if r.rule == "number":
        return f"{a} must be a number, got {r.actual!r}"
    if r.rule == "not_negative":
        return f"{a} must be >= 0, got {r.actual}"
    if r.rule == "dtype":
        return f"argument '{a}' must be {' or '.join(op.tensor(a).dtypes)}, got {r.actual}"
    if r.rule == "same_dtype":
        return f"argument '{a}' must have the dtype of '{f['other']}' ({f['expected']}), got {r.actual}"
    if r.rule == "strided":
        return (
            f"argument '{a}' is a strided (non-contiguous) view; pass a contiguous tensor (an op cannot "
            "write through a view, and reading one would need a copy)"
        )
    if r.rule == "shape":
        alternatives = " or ".join("[" + ", ".join(map(str, alt)) + "]" for alt in op.tensor(a).shapes)
        return f"argument '{a}' must have shape {alternatives}, got {_shape_text(r.actual)}"
    if r.rule == "size":
        axis = f["axis"]
        which = _AXES.get(axis, f"entries on axis {axis}")
        return (
            f"argument '{a}' has {r.actual} {which}, expected {Dim(f['symbol'], f['offset'])} = {f['expected']} "
            f"(from {_source(op, f['source'])})"
        )
    if r.rule == "device":
        return (
            f"argument '{a}' is on {r.actual} but '{f['other']}' is on {f['other_device']}; every tensor of a "
            "call must be on one device"
        )
    if r.rule == "symbol_range":
        lo, hi = op.symbol_ranges[f["symbol"]]
        return (
            f"argument {_source(op, f['source'])} gives {f['symbol']} = {r.actual}, which must be {_range_text(lo, hi)}"
        )
    if r.rule == "attr_range":
        attr = op.attr(a)
        lo, hi = _bound_text(attr.lo, f.get("lo")), _bound_text(attr.hi, f.get("hi"))
        return f"attribute '{a}' must be in [{lo}, {hi}], got {r.actual}"
    if r.rule == "choice":
        return f"attribute '{a}' must be one of {', '.join(repr(c) for c in op.attr(a).choices)}, got {r.actual!r}"
    if r.rule == "limit":
        symbol, backend = f["symbol"], f["backend"]
        what = "batch " if symbol == "B" else ""
        return (
            f"{what}{symbol} = {r.actual} (from {_source(op, f['source'])}) exceeds the {backend.upper()} limit of "
            f"{op.device_limits[backend][symbol]}"
        )
    if r.rule == "required":
        need = f" by strategy '{f['strategy']}'" if f.get("strategy") else ""
        return f"argument '{a}' is required{need}, got None"
    if r.rule == "missing":
        return f"argument '{a}' is missing or empty, but the call needs it with shape [{f['sizes']}]"
    if r.rule == "tree":
        return f"argument '{a}' of slot {f['slot']} is not a tree: {tree_fault(**f['fault'])}"
    if r.rule == "attr_type":
        return f"attribute '{a}' must be {'an' if f['kind'] == 'int' else 'a'} {f['kind']}, got {r.actual}"
    if r.rule == "not_tensor":
        return f"argument '{a}' must be {f['expected']}, got {r.actual}"
    if r.rule == "unknown_attrs":
        return f"unknown attribute(s) {r.actual}; it takes {list(op.attr_names)}"
    if r.rule == "attr_required":
        return f"attribute '{a}' is required"
    raise ValueError(f"no words for rule {r.rule!r}")


def tree_fault(
    kind: str, node: int = 0, parent: int = 0, depth: int = 0, nodes: int = 0, cols: int = 0, max_depth: int = 0
) -> str:
    """Why one slot's ``draft_tree_parents`` is not a tree (docs/trees.md), as the reference says it."""
    if kind == "too_many_nodes":
        return f"{nodes} nodes (seq_lens_this_time) do not fit the layout's N = {cols} columns"
    if kind == "no_parent":
        return f"node {node} has no parent ({parent})"
    if kind == "cycle":
        return f"node {node}: the parent is the node itself (a cycle)"
    if kind == "parent_after":
        return f"node {node}: the parent {parent} comes after its child"
    return f"node {node} has depth {depth}, over K = {max_depth}"


def error(op: OpSchema | str, refusal: Refusal, kind: type | None = None) -> FastspecArgumentError:
    """The exception of a refused call of ``op`` (an op's schema, or the name of another call such as
    ``"SuffixCache.speculate"``), worded from ``refusal``; ``kind``: a subclass to raise instead."""
    kind = kind or (FastspecTypeError if refusal.rule in _TYPE_RULES else FastspecArgumentError)
    if isinstance(op, str):
        return kind(f"{op}: {_words(None, refusal)}")
    return kind(f"{op.name}: {_words(op, refusal)}")


def from_record(record: dict[str, Any]) -> Refusal:
    """A refusal from a native check's record (a dict: rule, argument, actual, and its facts)."""
    facts = dict(record)
    return Refusal(facts.pop("rule"), facts.pop("argument", ""), facts.pop("actual", None), facts)


def from_native(text: str) -> Refusal | None:
    """The refusal recorded in a native check's message, or None when it holds none."""
    start = text.find(NATIVE_MARK)
    if start < 0:
        return None
    return from_record(json.loads(text[start + len(NATIVE_MARK) :].splitlines()[0]))

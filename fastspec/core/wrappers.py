"""Builds the public op functions of both front ends from the op schemas.

``fastspec.ops`` (Paddle) and ``fastspec.arrays`` (pointer API) each give
:func:`make_op` a schema and a ``run`` function; the result is a function with
the op's signature (the documented order, every input also by keyword, attributes
keyword-only), a docstring with a runnable example (its example call), and a named-tuple result.
"""

from __future__ import annotations

import collections
import functools
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

from fastspec.core.errors import FastspecTypeError
from fastspec.core.example_text import call_lines
from fastspec.core.examples import example_about
from fastspec.core.schema import SCHEMAS, OpSchema, Tensor


@functools.cache
def result_type(op_name: str) -> type:
    """The named tuple an op returns (shared by both front ends)."""
    op = SCHEMAS[op_name]
    return collections.namedtuple(op.result, op.returns)


def _tensor_line(tensor: Tensor) -> str:
    dtype = " / ".join(tensor.dtypes)
    flags = ", in place" if tensor.inplace else ""
    if tensor.needed_by:
        flags += ", strategy " + " / ".join(f"'{s}'" for s in tensor.needed_by) + " only (else None)"
    elif tensor.optional:
        flags += ", or None"
    return f"    {tensor.name}: {dtype} ``{tensor.shape}``{flags}: {tensor.doc}."


def _doc(op: OpSchema, setup: str, outputs_are_args: bool, extra_doc: str) -> str:
    lines = [op.summary, "", op.details, "", "Args:"]
    tensors = op.tensors if outputs_are_args else op.inputs
    lines += [_tensor_line(t) for t in tensors]
    if outputs_are_args and op.outputs:
        lines.append("    (outputs: caller-provided buffers, written in full; None allocates them)")
    for attr in op.attrs:
        default = "required" if attr.required else f"default {attr.default!r}"
        lines.append(f"    {attr.name} ({attr.kind}, keyword, {default}): {attr.doc}.")
    lines += [extra_doc, "", "Returns:"]
    returns = op.returns
    if len(returns) == 1:
        lines.append(f"    ``{returns[0]}``.")
    else:
        lines.append(
            f"    ``{op.result}({', '.join(returns)})``, a named tuple"
            + (" (the in-place tensors, updated)" if any(t.inplace for t in op.inputs) else "")
            + "."
        )
    lines += [
        "",
        "Raises:",
        "    FastspecArgumentError (a ValueError) naming the op and the argument: a wrong dtype, shape,",
        "    device or strided view, shapes that disagree, an attribute out of range, a missing tensor;",
        "    FastspecTypeError (also a TypeError) for an argument of the wrong Python type.",
        "",
        "Example, the op's call in ``fastspec.core.examples`` (docs/ops/examples.md shows what it returns):",
        f"    {example_about(op.name)}",
        "",
        setup,
        *call_lines(op.name),
    ]
    return "\n".join(line.rstrip() for line in lines)


def signature(op: OpSchema, outputs_are_args: bool, extras: tuple[inspect.Parameter, ...]) -> inspect.Signature:
    """Inputs in the documented order (positional or keyword; None default from the first optional one on),
    then the outputs where the front end takes them, then the attributes and extras, keyword-only."""
    params, defaulted = [], False
    tensors = op.tensors if outputs_are_args else op.inputs
    for tensor in tensors:
        defaulted = defaulted or tensor.optional or bool(tensor.needed_by) or tensor.output
        params.append(
            inspect.Parameter(
                tensor.name,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                default=None if defaulted else inspect.Parameter.empty,
            )
        )
    for attr in op.attrs:
        params.append(
            inspect.Parameter(
                attr.name,
                inspect.Parameter.KEYWORD_ONLY,
                default=inspect.Parameter.empty if attr.required else attr.default,
            )
        )
    return inspect.Signature(params + list(extras))


@dataclass(frozen=True)
class FastPath:
    """Lines a front end puts at the head of an op's generated function (indented by 4; the
    arguments are local variables by name) and the names they use (the function's globals:
    ``_op`` and ``_run`` are added). They return the result of a call they can check and run
    themselves; else the general ``run`` does it."""

    lines: tuple[str, ...] = ()
    names: dict[str, Any] = field(default_factory=dict)


def _dict_source(names: Any) -> str:
    return "{" + ", ".join(f"{name!r}: {name}" for name in names) + "}"


def literal_function(name: str, sig: inspect.Signature, body: list[str], names: dict[str, Any]) -> Callable:
    """A function ``name`` whose parameters are spelled out as ``sig``'s (defaults by name): Python
    binds a call to it at the cost of any call, where ``inspect.Signature.bind`` costs microseconds.
    ``names`` becomes its globals (what the body refers to)."""
    params, keyword_only, defaults = [], False, {}
    for p in sig.parameters.values():
        if p.kind is inspect.Parameter.KEYWORD_ONLY and not keyword_only:
            params.append("*")
            keyword_only = True
        if p.default is inspect.Parameter.empty:
            params.append(p.name)
        else:
            defaults[f"_default_{p.name}"] = p.default
            params.append(f"{p.name}=_default_{p.name}")
    source = f"def {name}({', '.join(params)}):\n" + "\n".join(f"    {line}" for line in body) + "\n"
    names.update(defaults)
    exec(compile(source, f"<fastspec.{name}>", "exec"), names)  # noqa: S102 (source made from our schema)
    return names.pop(name)


def make_op(
    op: OpSchema,
    run: Callable[..., Any],
    *,
    module: str,
    setup: str,
    outputs_are_args: bool,
    extras: tuple[inspect.Parameter, ...] = (),
    extra_doc: str = "",
    fast_path: FastPath | None = None,
) -> Callable[..., Any]:
    """A public op function: binds the call to ``op``'s signature and hands
    ``run(op, tensors, attrs, extras)`` dictionaries by name, unless the front end's
    ``fast_path`` lines returned first. Its ``bind_arguments`` attribute does the binding
    alone and returns those three dictionaries."""
    sig = signature(op, outputs_are_args, extras)
    tensor_names = {t.name for t in op.tensors}
    extra_names = {p.name for p in extras}

    def bind_arguments(*args: Any, **kwargs: Any) -> tuple[dict, dict, dict]:
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as error:
            raise FastspecTypeError(f"{op.name}: {error}") from None
        bound.apply_defaults()
        given = bound.arguments
        tensors = {name: value for name, value in given.items() if name in tensor_names}
        attrs = {a.name: given[a.name] for a in op.attrs}
        return tensors, attrs, {name: given[name] for name in extra_names}

    tensors = [name for name in sig.parameters if name in tensor_names]
    general = f"return _run(_op, {_dict_source(tensors)}, {_dict_source(op.attr_names)}, {_dict_source(extra_names)})"
    fast_path = fast_path or FastPath()
    fast_path.names.update(_run=run, _op=op)
    bound_call = literal_function(op.name, sig, [*fast_path.lines, general], fast_path.names)

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return bound_call(*args, **kwargs)
        except TypeError as error:
            if error.__traceback__.tb_next is None:  # raised by the binding itself: worded as the op's error
                bind_arguments(*args, **kwargs)
            raise

    call.__name__ = call.__qualname__ = op.name
    call.__module__ = module
    call.__signature__ = sig
    call.__doc__ = _doc(op, setup, outputs_are_args, extra_doc)
    call.bind_arguments = bind_arguments
    return call


def pack_result(op: OpSchema, values: dict[str, Any]) -> Any:
    """The op's result: its one returned tensor, or the named tuple of them."""
    if len(op.returns) == 1:
        return values[op.returns[0]]
    return result_type(op.name)(*(values[name] for name in op.returns))

"""The checked eager call of each op at the cost of Paddle's own call.

An eager call runs the custom op straight away and lets its C++ guard (generated
from the same schema, ``custom_ops/paddle/guard.h``) check dtypes, shapes, sizes,
attribute ranges and choices and devices. Python keeps only what the guard cannot
see, as literal tests in each op's generated function:

* a strided view (Paddle would hand the kernel a contiguous copy: in-place writes lost);
* None for a tensor the call needs (Paddle cannot take it), and an empty optional
  tensor (Paddle hands it to the kernel as absent: its dtype and shape unchecked);
* attribute types Paddle would convert (a numpy int for an int), an int past its C++ type
  (Paddle would refuse it in its own words) and the spelling of choices (any case, an enum).

Anything else (a static graph, a tensor of another class, an odd spelling) takes the
general path, :func:`fastspec.ops._library.run`, which checks everything in Python
first. When the guard refuses a call, it says which rule failed and
:func:`fastspec.ops._library.refused` words that (:mod:`fastspec.core.refusals`) exactly as
the general path would: nothing is checked twice.
"""

from __future__ import annotations

from typing import Any

from fastspec.core.schema import OpSchema, Tensor, VerifyStrategy
from fastspec.core.wrappers import FastPath, result_type


def fast_path(op: OpSchema) -> FastPath:
    """The head of ``op``'s generated function: the eager call, checked as the module says."""
    import paddle
    from paddle import _C_ops

    from fastspec.ops._library import refused

    names: dict[str, Any] = {
        "_eager": paddle.in_dynamic_mode,
        "_custom": _C_ops._run_custom_op,
        "_refused": refused,
        "_Tensor": paddle.Tensor,
        "_new_tuple": tuple.__new__,
    }
    if len(op.returns) > 1:
        names["_Result"] = result_type(op.name)
    lines = ["try:"]
    for attr in op.attrs:
        if attr.kind == "str":  # the choices as given (exact spelling or enum) -> the normalised value
            names[f"_choice_{attr.name}"] = _spellings(attr.choices)
            lines.append(f"    {attr.name} = _choice_{attr.name}[{attr.name}]")
    tests = ["_eager()"]
    for attr in op.attrs:
        if attr.kind in ("int", "bool"):
            tests.append(f"type({attr.name}) is {attr.kind}")
        if attr.kind == "int":
            tests.append(f"{-(1 << (attr.bits - 1))} <= {attr.name} < {1 << (attr.bits - 1)}")
    arguments = []
    for tensor in op.inputs:
        test, argument = _tensor_test(op, tensor, names)
        tests.append(test)
        arguments.append(argument)
    lines += [
        f"    _fast = {' and '.join(tests)}",
        "except Exception:  # a value only the general path can take, or explain",
        "    _fast = False",
        "if _fast:",
        "    try:",
        f"        _outs = _custom({f'fastspec_{op.name}'!r}, {', '.join(arguments + list(op.attr_names))})",
        "    except Exception as _error:",
        f"        raise _refused(_op, _error, {{{', '.join(f'{t.name!r}: {t.name}' for t in op.inputs)}}}) from None",
        f"    return {_result(op)}",
    ]
    return FastPath(tuple(lines), names)


def _spellings(choices: tuple[str, ...]) -> dict[Any, str]:
    """Each choice in lower and upper case, and as a ``VerifyStrategy`` (an enum member hashes by
    its name, so it is a key of its own); other spellings take the general path."""
    spellings: dict[Any, str] = {s: choice for choice in choices for s in (choice, choice.upper())}
    spellings.update({member: member.value for member in VerifyStrategy if member.value in choices})
    return spellings


def _tensor_test(op: OpSchema, tensor: Tensor, names: dict[str, Any]) -> tuple[str, str]:
    """(the test a tensor must pass for the fast path, the expression the custom op gets)."""
    name = tensor.name
    present = f"{name}.is_contiguous()"  # None or a non-tensor raises: the general path
    if tensor.optional or tensor.needed_by:
        present += f" and {name}._is_initialized()"  # an empty one would reach the kernel as absent
    if tensor.optional:
        present = f"({name} is None or {present})"
    if not tensor.needed_by:
        return present, name
    names[f"_needs_{name}"] = frozenset(tensor.needed_by)
    used = f"{op.strategy_attr} in _needs_{name}"
    # a tensor the strategy does not read is ignored (passed as None), but must still be a tensor or None
    return (f"({present} if {used} else {name} is None or isinstance({name}, _Tensor))", f"{name} if {used} else None")


def _result(op: OpSchema) -> str:
    new = len(op.outputs)
    values = [t.name for t in op.inputs if t.inplace and not t.optional]
    values += [f"_outs[{i - new}]" for i in range(new)]
    if len(values) == 1:
        return values[0]
    return f"_new_tuple(_Result, ({', '.join(values)}))"

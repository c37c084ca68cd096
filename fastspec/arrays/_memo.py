"""The checked call of the array API at the cost of a prepared launch.

The checks of a call (:func:`fastspec.core.validate.validate`) depend on nothing but
each array's dtype, shape and contiguity (and device: a numpy array's is the CPU)
and the attribute values with their types. So a call on plain numpy arrays keeps its
checks' verdict (which tensors the kernel gets, their dtype codes, the attributes as
the kernel reads them, the shapes of the outputs to allocate) under exactly that key,
and a later call whose arrays have the same key runs the kernel at once: its checks
would say the same. The key is built by literal code generated for each op; anything
that cannot be keyed (None where a tensor is needed, a non-numpy array, extras other
than their defaults) takes the general path, which checks everything, words every
error, and remembers the verdict of a good numpy call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from fastspec.core.schema import OpSchema, Tensor
from fastspec.core.wrappers import FastPath, result_type

MEMO_SIZE = 256  # verdicts kept per op (a runner's shapes change with its batch; cleared when full)


@dataclass(frozen=True)
class Verdict:
    """What the checks of one call decided, in schema order of the op's tensors."""

    used: tuple[bool, ...]  # the tensors the kernel gets (a strategy may ignore some)
    dtype_codes: list[int]  # fastspec.core.dtypes codes (-1: not used)
    attrs: list[int]  # the attributes as the kernel reads them (a choice by its index)
    output_shapes: tuple[tuple[int, ...], ...]  # of each new output, to allocate where not given


_MEMOS: dict[str, dict[tuple, Verdict]] = {}


# the launch keywords of fastspec.arrays' functions (its _EXTRAS), handed to the general path as they came
EXTRA_NAMES = (
    "num_threads",
    "stream",
    "backend",
    "xpu_grid",
    "xpu_reverse_clusters",
    "cuda_block_order",
    "cuda_shuffle_seed",
)


def remember(op: OpSchema, key: tuple, verdict: Verdict) -> None:
    memo = _MEMOS[op.name]
    if len(memo) >= MEMO_SIZE:
        memo.clear()
    memo[key] = verdict


def _key_part(tensor: Tensor, required: bool) -> str:
    name = tensor.name
    part = f"(type({name}), {name}.dtype, {name}.shape, {name}.flags.c_contiguous)"  # None: raises if required
    return part if required else f"(None if {name} is None else {part})"


def fast_path(
    op: OpSchema,
    general: Callable[..., Any],
    default_xpu_grid: tuple[int, int],
    value_check: tuple[Callable[..., None], tuple[str, ...]] | None = None,
) -> FastPath:
    """The head of ``op``'s generated function: the key, then the remembered launch or ``general``
    (``fastspec.arrays.run_remembered(op, tensors, attrs, extras, key)``). ``value_check``: (a check
    of the values, the arrays it takes by name), run before every launch (values are no part of the key)."""
    from fastspec.arrays import module

    def load_then_run(*args: Any) -> None:  # the bindings load on the first call, as everywhere in the API
        names["_run_numpy"] = module().run_numpy
        names["_run_numpy"](*args)

    _MEMOS.setdefault(op.name, {})
    names: dict[str, Any] = {
        "_memo": _MEMOS[op.name],
        "_general": general,
        "_run_numpy": load_then_run,
        "_empty": np.empty,
        "_new_tuple": tuple.__new__,
        "_xpu_grid": default_xpu_grid,
    }
    if len(op.returns) > 1:
        names["_Result"] = result_type(op.name)
    parts = [f"type({a}), {a}" for a in op.attr_names]  # True == 1, but not for the checks
    parts += [_key_part(t, required=not (t.optional or t.needed_by or t.output)) for t in op.tensors]
    tensors = ", ".join(f"{t.name!r}: {t.name}" for t in op.tensors)
    attrs = ", ".join(f"{a!r}: {a}" for a in op.attr_names)
    extras = ", ".join(f"{name!r}: {name}" for name in EXTRA_NAMES)
    lines = [
        "try:",
        f"    _key = ({', '.join(parts)},)",
        "    _verdict = _memo.get(_key) if (stream is None and backend is None and xpu_grid is _xpu_grid",
        "                                   and xpu_reverse_clusters is False and type(num_threads) is int) else None",
        "except Exception:  # not a plain numpy call: only the general path can take or explain it",
        "    _key = _verdict = None",
        "if _verdict is None:",
        f"    return _general(_op, {{{tensors}}}, {{{attrs}}}, {{{extras}}}, _key)",
    ]
    for i, out in enumerate(op.outputs):
        lines.append(
            f"{out.name} = _empty(_verdict.output_shapes[{i}], {out.dtypes[0]!r}) if {out.name} is None else {out.name}"
        )
    if value_check is not None:
        names["_check_values"], checked = value_check
        lines.append(f"_check_values({', '.join(checked)})")
    arrays = [f"{t.name} if _verdict.used[{i}] else None" if t.needed_by else t.name for i, t in enumerate(op.tensors)]
    lines.append(f"_run_numpy({op.name!r}, [{', '.join(arrays)}], _verdict.dtype_codes, _verdict.attrs, num_threads)")
    values = [t.name for t in op.inputs if t.inplace and not t.optional] + list(op.output_names)
    lines.append(f"return {values[0]}" if len(values) == 1 else f"return _new_tuple(_Result, ({', '.join(values)},))")
    return FastPath(tuple(lines), names)

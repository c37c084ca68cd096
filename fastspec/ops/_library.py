"""The Paddle front end: loads the op library and runs its ops in every Paddle mode."""

from __future__ import annotations

import functools
import warnings
from pathlib import Path
from typing import Any

from fastspec.core.errors import FastspecArgumentError, FastspecBuildError
from fastspec.core.refusals import Refusal, from_native
from fastspec.core.refusals import error as refusal_error
from fastspec.core.schema import OpSchema
from fastspec.core.validate import UNKNOWN, TensorMeta, validate
from fastspec.core.wrappers import pack_result
from fastspec.ops.cpu_memory import keep_freed_cpu_memory

LIBRARY = Path(__file__).resolve().parent.parent / "_lib" / "fastspec_ops.so"


@functools.cache
def load() -> list[str]:
    """Registers fastspec's ops with Paddle; returns their names."""
    if not LIBRARY.exists():
        raise FastspecBuildError(
            f"fastspec's op library {LIBRARY} is not built: run `python setup_ops.py` in the repository root"
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Paddle warns about ccache on import of its builder
        from paddle.utils.cpp_extension.extension_utils import load_op_meta_info_and_register_op

    keep_freed_cpu_memory()  # the ops' new outputs reuse freed memory instead of faulting in fresh pages
    return load_op_meta_info_and_register_op(str(LIBRARY))


def _device(place: Any) -> str:
    if place.is_cpu_place():
        return "cpu"
    if place.is_gpu_place():
        return f"cuda:{place.gpu_device_id()}"
    if place.is_xpu_place():
        return f"xpu:{place.xpu_device_id()}"
    return str(place)  # pinned and custom places: no kernel runs there


@functools.cache
def _dtype_name(dtype: Any) -> str:
    name = str(dtype).removeprefix("paddle.").removeprefix("VarType.").lower()
    return {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}.get(name, name)


def tensor_meta(op: OpSchema, name: str, value: Any, eager: bool) -> TensorMeta:
    """The checks' view of a Paddle tensor (eager) or graph variable (static: dims may be unknown)."""
    import paddle

    if eager and isinstance(value, paddle.Tensor):
        return TensorMeta(_dtype_name(value.dtype), tuple(value.shape), value.is_contiguous(), _device(value.place))
    if not eager and hasattr(value, "dtype") and hasattr(value, "shape"):
        shape = tuple(UNKNOWN if d is None or d < 0 else int(d) for d in value.shape)
        return TensorMeta(_dtype_name(value.dtype), shape, True, "graph")  # a graph variable has no place yet
    raise _not_a_tensor(op, name, value)


def _not_a_tensor(op: OpSchema, name: str, value: Any) -> Exception:
    return refusal_error(op, Refusal("not_tensor", name, type(value).__name__, {"expected": "a paddle.Tensor"}))


def run(op: OpSchema, tensors: dict[str, Any], attrs: dict[str, Any], _extras: dict[str, Any]) -> Any:
    """Checks a call against the schema and runs ``fastspec_<op>``; returns the op's result."""
    import paddle

    load()
    eager = paddle.in_dynamic_mode()
    metas = {name: None if value is None else tensor_meta(op, name, value, eager) for name, value in tensors.items()}
    checked = validate(op, metas, attrs)
    inputs = {t.name: tensors[t.name] if t.name in checked.used else None for t in op.inputs}
    outs = run_op(op, inputs, [checked.attrs[a.name] for a in op.attrs])
    return pack_result(op, {**{t.name: tensors[t.name] for t in op.inputs if t.inplace}, **outs})


def run_op(op: OpSchema, inputs: dict[str, Any], attrs: list[Any]) -> dict[str, Any]:
    """Runs the registered custom op ``fastspec_<op>``; returns its new outputs by name.

    Eager and PIR programs call the op directly; a legacy static program gets an op
    appended whose in-place outputs are the input variables themselves.
    """
    import paddle
    from paddle import _C_ops

    name, new = f"fastspec_{op.name}", op.output_names
    if paddle.framework.in_dynamic_or_pir_mode():
        try:
            outs = _C_ops._run_custom_op(name, *inputs.values(), *attrs)
        except (OSError, ValueError) as error:  # the C++ guard (static graphs whose shapes were unknown)
            raise refused(op, error) from None
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        return dict(zip(new, outs[len(outs) - len(new) :]))

    from paddle.base.layer_helper import LayerHelper

    helper = LayerHelper(name)
    outputs = {f"{t.name}_out": inputs[t.name] for t in op.inputs if t.inplace and inputs[t.name] is not None}
    outputs.update({t: helper.create_variable(dtype="float32") for t in new})
    helper.append_op(
        type=name,
        inputs={key: value for key, value in inputs.items() if value is not None},
        outputs=outputs,
        attrs=dict(zip(op.attr_names, attrs)),
    )
    return {t: outputs[t] for t in new}


def refused(op: OpSchema, error: Exception, tensors: dict[str, Any] | None = None) -> Exception:
    """The error of a call the op's guard or Paddle refused: the guard's refusal worded by
    :mod:`fastspec.core.refusals`; where Paddle refused before the guard, the argument that is no
    Paddle tensor (of ``tensors``, the eager call's; the guard cannot see it); another of the
    guard's errors as a FastspecArgumentError (Paddle raises them as a ValueError); any other
    error as is."""
    import paddle

    refusal = from_native(str(error)) if isinstance(error, (OSError, ValueError)) else None
    if refusal is not None:
        return refusal_error(op, refusal)
    for name, value in (tensors or {}).items():
        if value is not None and not isinstance(value, paddle.Tensor):
            return _not_a_tensor(op, name, value)
    text, public = str(error), f"{op.name}: "
    if isinstance(error, (OSError, ValueError)) and public in text:
        return FastspecArgumentError(text[text.index(public) :].splitlines()[0])
    return error

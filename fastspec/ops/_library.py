"""Loads the compiled op library once and runs its ops in every Paddle mode."""

from __future__ import annotations

import functools
import warnings
from pathlib import Path
from typing import Any

LIBRARY = Path(__file__).resolve().parent.parent / "_lib" / "fastspec_ops.so"


class FastspecBuildError(ImportError):
    """The compiled op library is missing or does not load."""


class FastspecArgumentError(ValueError):
    """An op rejected an argument: the message names the op, the argument, the expected and actual value."""


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

    return load_op_meta_info_and_register_op(str(LIBRARY))


@functools.cache
def declared_attrs(name: str) -> list[str]:
    """The attribute names op ``name`` declares, in order."""
    from paddle.base.framework import OpProtoHolder
    from paddle.utils.cpp_extension.extension_utils import DEFAULT_OP_ATTR_NAMES

    proto = OpProtoHolder.instance().get_op_proto(name)
    return [attr.name for attr in proto.attrs if attr.name not in DEFAULT_OP_ATTR_NAMES]


def run_op(
    name: str,
    inputs: dict[str, Any],
    attrs: dict[str, Any],
    outputs: list[str],
    inplace: dict[str, str] | None = None,
) -> list[Any]:
    """Runs custom op ``name``; ``inplace`` maps an output to the input it overwrites.

    Eager and PIR programs call the op directly; a legacy static program gets
    an op appended whose in-place outputs are the input variables themselves.
    """
    load()
    import paddle
    from paddle import _C_ops

    inplace = inplace or {}
    expected = declared_attrs(name)
    if list(attrs) != expected:  # Paddle reads attributes by position: a missing one would crash
        raise FastspecArgumentError(f"{name.removeprefix('fastspec_')}: attributes must be {expected}, got {list(attrs)}")
    if paddle.framework.in_dynamic_or_pir_mode():
        try:
            outs = _C_ops._run_custom_op(name, *inputs.values(), *attrs.values())
        except OSError as error:  # how Paddle surfaces the op's PD_THROW
            public = name.removeprefix("fastspec_") + ": "
            text = str(error)
            if public not in text:
                raise
            message = text[text.index(public):].splitlines()[0]
            raise FastspecArgumentError(message) from None
        return list(outs) if isinstance(outs, (list, tuple)) else [outs]

    from paddle.base.layer_helper import LayerHelper

    helper = LayerHelper(name)
    outs = {
        out: inputs[inplace[out]] if out in inplace else helper.create_variable(dtype="float32")
        for out in outputs
    }
    helper.append_op(
        type=name,
        inputs={key: value for key, value in inputs.items() if value is not None},
        outputs=outs,
        attrs=attrs,
    )
    return [outs[out] for out in outputs]

"""The pointer API: every op on raw arrays, without Paddle.

numpy arrays and CPU torch tensors run on the CPU kernels; CUDA torch tensors
and CuPy arrays on the CUDA kernels (on the framework's current stream, or
``stream=``); any other array that speaks DLPack is read through
``__dlpack__``. Every call is checked against the op's schema
(:mod:`fastspec.core.schema`) exactly as :mod:`fastspec.ops` checks it: dtype,
shape, contiguity and device of every array, so a bad call raises
:class:`FastspecArgumentError` naming the argument instead of reading past an
array. Nothing is copied or converted: in-place arrays are written in place.
New outputs (``top_p_candidates``' candidates, ``sample_tokens``' tokens,
``top_k_top_p_probs``' ``target_probs``, ``update_model_status``' ``has_running``) are the caller's arrays where given
(CUDA Graph capture needs fixed buffers) and allocated otherwise.

``backend="xpu_emulator"`` runs numpy arrays on the Kunlunxin XPU3 kernels
(``custom_ops/xpu``) through the host emulation of the XPU, on ``xpu_grid=
(clusters, cores)`` (default ``(12, 64)``, an XPU3's); the results are the
CPU backend's bit for bit. ``xpu_reverse_clusters=True`` runs the clusters
last to first (a test mode). See docs/xpu.md.

``backend="cuda_emulator"`` runs numpy arrays (or CPU torch tensors) on the CUDA kernels
(``custom_ops/cuda``) through the host emulation of a CUDA device, with the
launch configuration the CUDA launchers choose and the CUDA backend's limits;
``cuda_block_order="forward" | "reverse" | "shuffle"`` (with
``cuda_shuffle_seed``) orders the blocks (and a block's threads). A kernel
breaking a rule of the CUDA execution model fails with a ``RuntimeError``
naming the rule, block and thread. See docs/cuda_emulation.md.

numpy has no bfloat16: a ``uint16`` array passed as probabilities is read as
bfloat16 bits. Built by ``python setup_ops.py`` (``--bindings-only`` needs no
Paddle). ``FASTSPEC_KERNELS_LIB=sanitize`` loads the bindings built with ASan and
UBSan (``python setup_ops.py --bindings-only --sanitize``) instead: the fuzzer's
library, which needs the sanitizer runtimes preloaded (docs/fuzzing.md).
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import importlib.util
import inspect
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fastspec.arrays._memo import EXTRA_NAMES, Verdict, fast_path, remember
from fastspec.core.dtypes import DTYPE_CODES
from fastspec.core.errors import FastspecArgumentError, FastspecBuildError, FastspecTypeError
from fastspec.core.example_text import ARRAYS_SETUP
from fastspec.core.refusals import Refusal
from fastspec.core.refusals import error as refusal_error
from fastspec.core.schema import SCHEMAS, OpSchema, Tensor, VerifyStrategy
from fastspec.core.validate import TensorMeta, validate
from fastspec.core.wrappers import make_op, pack_result, result_type

BACKENDS = {"cpu": 0, "cuda": 1, "xpu": 2, "cuda_emulator": 3}  # op_call.h Backend
KERNELS_LIB_ENV = "FASTSPEC_KERNELS_LIB"  # unset: fastspec/_lib; "sanitize": SANITIZE_LIB_DIR
SANITIZE_LIB_DIR = Path(__file__).resolve().parents[2] / "build" / "sanitize"  # setup_ops.py's


def _load_sanitized() -> Any:
    """The bindings built by ``setup_ops.py --bindings-only --sanitize`` (a source tree only)."""
    found = sorted(SANITIZE_LIB_DIR.glob("fastspec_kernels*.so"))
    if not found:
        raise FastspecBuildError(
            f"{KERNELS_LIB_ENV}=sanitize, but {SANITIZE_LIB_DIR} has no fastspec_kernels library: "
            "run `python setup_ops.py --bindings-only --sanitize`"
        )
    spec = importlib.util.spec_from_file_location("fastspec_kernels", found[0])
    library = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(library)
    return library


@functools.cache
def module() -> Any:
    """The compiled ``fastspec_kernels`` extension (``FASTSPEC_KERNELS_LIB`` picks which)."""
    which = os.environ.get(KERNELS_LIB_ENV, "")
    if which == "sanitize":
        return _load_sanitized()
    if which not in ("", "default"):
        raise FastspecBuildError(f"{KERNELS_LIB_ENV} must be unset, 'default' or 'sanitize', got {which!r}")
    try:
        from fastspec._lib import fastspec_kernels
    except ImportError as error:
        raise FastspecBuildError(
            "fastspec's pybind11 bindings are not built: run `python setup_ops.py` (or `--bindings-only`)"
        ) from error
    return fastspec_kernels


@dataclass(frozen=True)
class Array:
    """One array as the kernels see it: its checks' view, its address and its framework."""

    meta: TensorMeta
    address: int
    framework: str  # "numpy", "torch", "cupy" or "dlpack"


# --- reading arrays -----------------------------------------------------------------------


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_DL_DEVICES = {1: "cpu", 2: "cuda", 3: "cuda_host", 4: "opencl", 13: "cuda_managed"}
_DL_DTYPES = {
    (0, 32): "int32",
    (0, 64): "int64",
    (1, 16): "uint16",
    (2, 16): "float16",
    (2, 32): "float32",
    (4, 16): "bfloat16",
    (6, 8): "bool",
}


def _from_dlpack(array: Any) -> Array:
    """Reads dtype, shape, strides, device and address from ``array.__dlpack__()`` without taking
    ownership (the capsule's deleter runs when the capsule is dropped; ``array`` keeps the data)."""
    device_type, device_id = array.__dlpack_device__()
    capsule = array.__dlpack__(stream=None if device_type == 1 else -1)  # -1: no synchronisation
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    tensor = _DLTensor.from_address(get(capsule, b"dltensor"))  # DLManagedTensor starts with its DLTensor
    shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
    contiguous = True
    if tensor.strides:
        expected = 1
        for axis in reversed(range(tensor.ndim)):
            if shape[axis] != 1 and tensor.strides[axis] != expected:
                contiguous = False
            expected *= shape[axis]
    dtype = _DL_DTYPES.get((tensor.dtype.code, tensor.dtype.bits), f"dlpack({tensor.dtype.code}, {tensor.dtype.bits})")
    device = _DL_DEVICES.get(device_type, f"dlpack_device_{device_type}")
    device = device if device == "cpu" else f"{device}:{device_id}"
    return Array(TensorMeta(dtype, shape, contiguous, device), (tensor.data or 0) + tensor.byte_offset, "dlpack")


_NUMPY_DTYPES = {np.dtype(name): name for name in ("bool", "int32", "int64", "uint16", "float16", "float32")}


def read_array(op: OpSchema, tensor: Tensor, array: Any) -> Array:
    """The checks' view of ``array`` (numpy, torch, cupy, or any DLPack producer)."""
    if isinstance(array, np.ndarray):
        dtype = _NUMPY_DTYPES.get(array.dtype) or str(array.dtype)
        meta = TensorMeta(dtype, array.shape, array.flags.c_contiguous, "cpu")
        found = Array(meta, array.ctypes.data, "numpy")
    elif type(array).__module__.startswith("torch"):
        device = "cpu" if array.device.type == "cpu" else f"{array.device.type}:{array.device.index or 0}"
        meta = TensorMeta(str(array.dtype).removeprefix("torch."), tuple(array.shape), array.is_contiguous(), device)
        found = Array(meta, array.data_ptr(), "torch")
    elif type(array).__module__.startswith("cupy"):
        meta = TensorMeta(str(array.dtype), tuple(array.shape), array.flags.c_contiguous, f"cuda:{array.device.id}")
        found = Array(meta, array.data.ptr, "cupy")
    elif hasattr(array, "__dlpack__") and hasattr(array, "__dlpack_device__"):
        found = _from_dlpack(array)
    else:
        raise refusal_error(
            op,
            Refusal(
                "not_tensor", tensor.name, type(array).__name__, {"expected": "an array (numpy, torch, cupy or DLPack)"}
            ),
        )
    if found.meta.dtype == "uint16" and "bfloat16" in tensor.dtypes:  # numpy's stand-in for bfloat16
        found = dataclasses.replace(found, meta=dataclasses.replace(found.meta, dtype="bfloat16"))
    return found


def _allocate(like: Array, array: Any, dtype: str, shape: tuple[int, ...]) -> Any:
    """A new output beside ``array`` (same framework and device)."""
    if like.framework == "torch":
        import torch

        return torch.empty(shape, dtype=getattr(torch, dtype), device=array.device)
    if like.framework == "cupy":
        import cupy

        with cupy.cuda.Device(array.device.id):
            return cupy.empty(shape, dtype=dtype)
    if like.framework != "numpy" and like.meta.device != "cpu":  # numpy: host memory (the emulated XPU's too)
        raise FastspecArgumentError(
            f"cannot allocate an output beside a {like.framework} array on {like.meta.device}: pass the output"
        )
    return np.empty(shape, dtype=dtype)


def _output_shape(tensor: Tensor, dims: dict[str, int]) -> tuple[int, ...]:
    return tuple(dims[d.symbol] + d.offset if d.symbol else d.offset for d in tensor.shapes[0])


def _current_stream(array: Array, value: Any) -> int:
    if array.framework == "torch":
        import torch

        return torch.cuda.current_stream(value.device).cuda_stream
    if array.framework == "cupy":
        import cupy

        return cupy.cuda.get_current_stream().ptr
    return 0


XPU_EMULATOR = "xpu_emulator"
CUDA_EMULATOR = "cuda_emulator"
EMULATED_DEVICES = {XPU_EMULATOR: "xpu:0", CUDA_EMULATOR: "cuda:0"}
DEFAULT_XPU_GRID = (12, 64)
CUDA_BLOCK_ORDERS = ("forward", "reverse", "shuffle")  # op_call.h cuda_block_order


def _on_emulated_device(op: OpSchema, backend: str, name: str, array: Array) -> Array:
    """An array of a backend="xpu_emulator" or "cuda_emulator" call, moved onto the emulated device
    (host memory is its global memory), so that device's limits apply. numpy arrays and CPU torch
    tensors qualify: both are host memory the checks can bound."""
    if not (array.framework == "numpy" or (array.framework == "torch" and array.meta.device == "cpu")):
        raise FastspecArgumentError(
            f"{op.name}: backend='{backend}' runs on numpy arrays (or CPU torch tensors); "
            f"argument '{name}' is a {array.framework} array on {array.meta.device}"
        )
    return dataclasses.replace(array, meta=dataclasses.replace(array.meta, device=EMULATED_DEVICES[backend]))


def _cuda_block_order(op: OpSchema, order: Any) -> int:
    if order not in CUDA_BLOCK_ORDERS:
        raise FastspecArgumentError(
            f"{op.name}: cuda_block_order must be one of {', '.join(CUDA_BLOCK_ORDERS)}, got {order!r}"
        )
    return CUDA_BLOCK_ORDERS.index(order)


def _xpu_grid(op: OpSchema, grid: Any) -> tuple[int, int]:
    try:
        clusters, cores = (int(v) for v in grid)
    except (TypeError, ValueError):
        raise FastspecArgumentError(f"{op.name}: xpu_grid must be (clusters, cores), got {grid!r}") from None
    if not (1 <= clusters <= 255 and 1 <= cores <= 64):
        raise FastspecArgumentError(f"{op.name}: xpu_grid {grid!r} must have 1..255 clusters of 1..64 cores")
    return clusters, cores


def _prepare(
    op: OpSchema, tensors: dict[str, Any], attrs: dict[str, Any], extras: dict[str, Any]
) -> tuple[Any, Any, Verdict]:
    """Checks a call against the schema and allocates missing outputs; returns (launch, result, verdict)."""
    arrays = {t.name: None if tensors[t.name] is None else read_array(op, t, tensors[t.name]) for t in op.tensors}
    backend = extras.get("backend")
    if backend not in (None, *EMULATED_DEVICES):
        raise FastspecArgumentError(
            f"{op.name}: backend must be None (the arrays' device), '{XPU_EMULATOR}' or "
            f"'{CUDA_EMULATOR}', got {backend!r}"
        )
    if backend:
        arrays = {name: a and _on_emulated_device(op, backend, name, a) for name, a in arrays.items()}
    checked = validate(op, {name: a and a.meta for name, a in arrays.items()}, attrs)
    anchor_name = checked.used[0]
    anchor = arrays[anchor_name]
    frameworks = {arrays[name].framework for name in checked.used}
    if len(frameworks) > 1:
        raise FastspecArgumentError(
            f"{op.name}: arrays of {' and '.join(sorted(frameworks))} are mixed; pass "
            "every array of a call from one framework"
        )
    values = dict(tensors)
    for out in op.outputs:
        if values[out.name] is None:
            values[out.name] = _allocate(anchor, tensors[anchor_name], out.dtypes[0], _output_shape(out, checked.dims))
            arrays[out.name] = read_array(op, out, values[out.name])
            if backend:
                arrays[out.name] = _on_emulated_device(op, backend, out.name, arrays[out.name])
    if checked.backend not in BACKENDS:
        raise FastspecArgumentError(f"{op.name}: no kernel for device {checked.device}")
    used = set(checked.used) | set(op.output_names)
    refs = [arrays[t.name] if t.name in used else None for t in op.tensors]
    attr_values = []
    for attr in op.attrs:
        value = checked.attrs[attr.name]
        attr_values.append(attr.choices.index(value) if attr.kind == "str" else int(value))
    stream = extras.get("stream")
    backend_index = BACKENDS[CUDA_EMULATOR if backend == CUDA_EMULATOR else checked.backend]
    if backend_index == BACKENDS["cuda"] and stream is None:
        stream = _current_stream(anchor, tensors[anchor_name])
    grid = _xpu_grid(op, extras.get("xpu_grid") or DEFAULT_XPU_GRID)
    block_order = _cuda_block_order(op, extras.get("cuda_block_order") or "forward")
    args = (
        op.name,
        backend_index,
        [r.address if r else 0 for r in refs],
        [DTYPE_CODES.get(r.meta.dtype, -1) if r else -1 for r in refs],
        [list(r.meta.shape) if r else [] for r in refs],
        [r is not None for r in refs],
        attr_values,
        int(stream or 0),
        int(extras.get("num_threads") or 0),
        grid,
        bool(extras.get("xpu_reverse_clusters")),
        block_order,
        int(extras.get("cuda_shuffle_seed") or 0),
    )
    verdict = Verdict(
        tuple(r is not None for r in refs),
        args[3],
        attr_values,
        tuple(_output_shape(out, checked.dims) for out in op.outputs),
    )
    launch = functools.partial(module().run, *args)
    launch.arrays = values  # the outputs allocated here live as long as the launch that writes them
    return launch, pack_result(op, values), verdict


def check_trees(parents: Any, lens: Any, enc: Any, accept: Any) -> None:
    """verify_draft_tree's trees, where their values are in host memory (numpy arrays: the CPU and the
    emulated devices); the kernels judge no drafts of a malformed tree, this refuses the call, naming
    the first slot whose tree is not one and why (the bindings judge every slot)."""
    if isinstance(parents, np.ndarray) and isinstance(lens, np.ndarray) and isinstance(enc, np.ndarray):
        fault = module().draft_tree_fault(parents, lens, enc, accept.shape[1] - 1)
        if fault is not None:
            raise refusal_error(SCHEMAS["verify_draft_tree"], Refusal("tree", "draft_tree_parents", facts=fault))


# per-slot values checked before every launch (not by prepare): (the check, the arrays it takes)
VALUE_CHECKS = {
    "verify_draft_tree": (
        check_trees,
        ("draft_tree_parents", "seq_lens_this_time", "seq_lens_encoder", "accept_tokens"),
    )
}


def _check_values(op: OpSchema, tensors: dict[str, Any]) -> None:
    if op.name in VALUE_CHECKS:
        check, names = VALUE_CHECKS[op.name]
        check(*(tensors[name] for name in names))


def run(op: OpSchema, tensors: dict[str, Any], attrs: dict[str, Any], extras: dict[str, Any]) -> Any:
    """Checks a call against the schema, allocates missing outputs and runs the kernel."""
    launch, result, _ = _prepare(op, tensors, attrs, extras)
    _check_values(op, tensors)
    launch()
    return result


def run_remembered(
    op: OpSchema, tensors: dict[str, Any], attrs: dict[str, Any], extras: dict[str, Any], key: tuple | None
) -> Any:
    """:func:`run`; the verdict of a call on plain numpy arrays on the CPU is kept under ``key``
    (see :mod:`fastspec.arrays._memo`), so the next call like it skips the checks."""
    launch, result, verdict = _prepare(op, tensors, attrs, extras)
    _check_values(op, tensors)  # the remembered call checks the values again, every time
    launch()
    if (
        key is not None
        and all(v is None or type(v) is np.ndarray for v in tensors.values())
        and extras["backend"] is None
        and extras["stream"] is None
    ):
        remember(op, key, verdict)
    return result


def prepare(op_name: str, *args: Any, **kwargs: Any) -> Any:
    """Checks a call of ``op_name`` once and returns a function that launches it again and again.

    The arrays (and outputs, allocated here where left out) must stay alive and keep their
    shapes; their contents may change between launches. For benchmarks and hot loops that
    cannot afford the checks on every call; ``fastspec.arrays.<op>`` is the safe way.
    """
    launch, _, _ = _prepare(SCHEMAS[op_name], *globals()[op_name].bind_arguments(*args, **kwargs))
    return launch


_EXTRAS = (
    inspect.Parameter("num_threads", inspect.Parameter.KEYWORD_ONLY, default=0),
    inspect.Parameter("stream", inspect.Parameter.KEYWORD_ONLY, default=None),
    inspect.Parameter("backend", inspect.Parameter.KEYWORD_ONLY, default=None),
    inspect.Parameter("xpu_grid", inspect.Parameter.KEYWORD_ONLY, default=DEFAULT_XPU_GRID),
    inspect.Parameter("xpu_reverse_clusters", inspect.Parameter.KEYWORD_ONLY, default=False),
    inspect.Parameter("cuda_block_order", inspect.Parameter.KEYWORD_ONLY, default="forward"),
    inspect.Parameter("cuda_shuffle_seed", inspect.Parameter.KEYWORD_ONLY, default=0),
)
assert tuple(p.name for p in _EXTRAS) == EXTRA_NAMES, "the fast path hands these keywords on by name"
_EXTRA_DOC = (
    "    num_threads (CPU only): 1 keeps the work on the calling thread, 0 uses the kernels' pool.\n"
    "    stream (CUDA only): the CUDA stream handle; default: the framework's current stream.\n"
    "    backend: None runs on the arrays' device; 'xpu_emulator' runs numpy arrays on the XPU kernels,\n"
    "        emulated on host threads, with xpu_grid=(clusters, cores) and, as a test mode,\n"
    "        xpu_reverse_clusters=True; 'cuda_emulator' runs numpy arrays (or CPU torch tensors) on the CUDA\n"
    "        kernels, emulated on host fibers, with the launches the CUDA launchers choose,\n"
    "        blocks in cuda_block_order ('forward', 'reverse' or 'shuffle', seeded by cuda_shuffle_seed)."
)


def _op(name: str) -> Any:
    op = SCHEMAS[name]
    head = fast_path(op, run_remembered, DEFAULT_XPU_GRID, VALUE_CHECKS.get(name))
    return make_op(
        op,
        run,
        module=__name__,
        setup=ARRAYS_SETUP,
        outputs_are_args=True,
        extras=_EXTRAS,
        extra_doc=_EXTRA_DOC,
        fast_path=head,
    )


# one function per declared op
_OPS = {name: _op(name) for name in SCHEMAS}
globals().update(_OPS)

__all__ = sorted(
    ["FastspecArgumentError", "FastspecTypeError", "VerifyStrategy", "module", "prepare", "result_type", *_OPS]
)

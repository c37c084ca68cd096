"""GPU tests run the CUDA kernels through the pybind11 bindings with PyTorch tensors.

They need a CUDA device, PyTorch and bindings built with CUDA
(`python setup_ops.py --bindings-only`); anywhere else they are skipped.
"""

import pytest

torch = pytest.importorskip("torch")

from fastspec import kernels  # noqa: E402


def _skip_reason() -> str | None:
    if not torch.cuda.is_available():
        return "no CUDA device"
    try:
        if not kernels.module().with_cuda:
            return "bindings built without CUDA"
    except ImportError as error:
        return str(error)
    return None


def pytest_collection_modifyitems(config, items):
    reason = _skip_reason()
    if reason:
        for item in items:
            if "tests/gpu/" in str(item.fspath):
                item.add_marker(pytest.mark.skip(reason=reason))

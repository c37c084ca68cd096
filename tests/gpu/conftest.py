"""GPU tests run the CUDA kernels through the pybind11 bindings with PyTorch tensors.

On a host with a CUDA device and bindings built with CUDA (`python setup_ops.py --bindings-only
--cuda on`) every test runs on the GPU. Elsewhere the same tests run on the host emulation of a
CUDA device (CPU torch tensors, `backend="cuda_emulator"`, fewer random cases: see
tests/helpers/cuda.py), except those marked `needs_gpu` (CUDA Graph capture and replay, raw device
pointers and streams), which are skipped with the reason. Without PyTorch the folder is not
collected. pytest's header says which target ran.
"""

from __future__ import annotations

import importlib.util

import pytest

HAS_TORCH = importlib.util.find_spec("torch") is not None
if not HAS_TORCH:
    collect_ignore_glob = ["*.py"]


def pytest_configure(config):
    config.addinivalue_line("markers", "needs_gpu: needs a real CUDA device (skipped on the CUDA emulator)")


def _bindings_missing() -> str | None:
    from fastspec import arrays

    try:
        arrays.module()
    except ImportError as error:
        return str(error)
    return None


def pytest_report_header(config):
    if not HAS_TORCH:
        return "tests/gpu: not collected, PyTorch is not installed"
    from tests.helpers.cuda import gpu_unavailable

    missing, reason = _bindings_missing(), gpu_unavailable()
    if missing:
        return f"tests/gpu: skipped, {missing}"
    return f"tests/gpu: on the CUDA emulator ({reason}; needs_gpu tests skipped)" if reason else "tests/gpu: on CUDA"


def pytest_collection_modifyitems(config, items):
    if not HAS_TORCH:
        return
    from tests.helpers.cuda import gpu_unavailable

    missing, reason = _bindings_missing(), gpu_unavailable()
    for item in items:
        if "tests/gpu/" not in str(item.fspath):
            continue
        if missing:
            item.add_marker(pytest.mark.skip(reason=missing))
        elif reason and item.get_closest_marker("needs_gpu"):
            item.add_marker(pytest.mark.skip(reason=f"needs a real GPU ({reason})"))


@pytest.fixture(autouse=True)
def _block_order_per_test(request):
    """On the emulator each test starts at its own block order."""
    from tests.helpers.cuda import target

    target.start(request.node.nodeid)

"""GPU tests run the CUDA kernels through the pybind11 bindings with PyTorch tensors.

They need a CUDA device, PyTorch and bindings built with CUDA
(`python setup_ops.py --bindings-only`). Without PyTorch the folder is not
collected; without a device or CUDA bindings every test in it is skipped.
The reason is printed in pytest's header.
"""

from __future__ import annotations

import importlib.util

import pytest

HAS_TORCH = importlib.util.find_spec("torch") is not None
if not HAS_TORCH:
    collect_ignore_glob = ["*.py"]


def _skip_reason() -> str | None:
    if not HAS_TORCH:
        return "PyTorch is not installed"
    import torch

    if not torch.cuda.is_available():
        return "no CUDA device"
    from fastspec import arrays as kernels

    try:
        if not kernels.module().with_cuda:
            return "bindings built without CUDA"
    except ImportError as error:
        return str(error)
    return None


def pytest_report_header(config):
    reason = _skip_reason()
    return f"tests/gpu: {'skipped, ' + reason if reason else 'running on CUDA'}"


def pytest_collection_modifyitems(config, items):
    reason = _skip_reason()
    if reason:
        for item in items:
            if "tests/gpu/" in str(item.fspath):
                item.add_marker(pytest.mark.skip(reason=reason))

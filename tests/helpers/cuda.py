"""Moving numpy cases to the GPU and back, and CUDA Graph capture, for the GPU tests."""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch


def to_device(arrays: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
    return {name: torch.from_numpy(np.ascontiguousarray(value)).cuda() for name, value in arrays.items()}


def to_host(tensors: dict[str, torch.Tensor]) -> dict[str, np.ndarray]:
    return {name: value.cpu().numpy() for name, value in tensors.items()}


def capture(step: Callable[[], None]) -> torch.cuda.CUDAGraph:
    """Captures `step` (after one warm-up run on a side stream) into a CUDA Graph."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    return graph


def copy_into(tensors: dict[str, torch.Tensor], arrays: dict[str, np.ndarray]) -> None:
    """Overwrites captured buffers in place (a graph replays on the same addresses)."""
    for name, value in arrays.items():
        tensors[name].copy_(torch.from_numpy(np.ascontiguousarray(value)))


def run_ngram_cuda(op: str, arrays: dict[str, np.ndarray], attrs: dict) -> tuple[np.ndarray, np.ndarray]:
    """An n-gram kernel (``ngram_match`` / ``ngram_append``) on CUDA through the bindings."""
    from fastspec import arrays as kernels
    from tests.ngram_cases import ARRAY_NAMES

    tensors = to_device(arrays)
    getattr(kernels, op)(*(tensors[name] for name in ARRAY_NAMES), **attrs)
    torch.cuda.synchronize()
    out = to_host(tensors)
    return out["draft_tokens"], out["seq_lens_this_time"]

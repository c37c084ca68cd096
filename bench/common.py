"""Timing, floors and JSON output shared by the benchmarks."""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
import warnings
from pathlib import Path
from typing import Callable

import numpy as np

# Paddle warns on import that ccache is missing; it only matters when compiling through Paddle.
warnings.filterwarnings("ignore", message="No ccache found")

RESULTS = Path(__file__).resolve().parent / "results"
NGRAM_WORKLOADS = ("nomatch", "text")  # bench.workloads.ngram_inputs' kinds


def device(text: str) -> str:
    """argparse type of ``--device``: cpu, or cuda where the bindings hold CUDA kernels and PyTorch sees a GPU."""
    import argparse

    if text == "cuda":
        from fastspec import arrays

        if not arrays.module().with_cuda:
            raise argparse.ArgumentTypeError(
                "cuda: these bindings were built without CUDA (no toolkit found when "
                "`python setup_ops.py` ran; see `python -m fastspec info`)"
            )
        try:
            import torch
        except ImportError:
            raise argparse.ArgumentTypeError("cuda: the CUDA benchmarks need PyTorch, which is not installed") from None
        if not torch.cuda.is_available():
            raise argparse.ArgumentTypeError("cuda: PyTorch sees no GPU here")
    elif text != "cpu":
        raise argparse.ArgumentTypeError(f"must be cpu or cuda, got {text!r}")
    return text


def median_seconds(fn: Callable[[], object], *, repeat: int = 20, warmup: int = 3, budget_s: float = 2.0) -> float:
    """Median wall time of ``fn`` after warm-up; fewer repeats when one call is slow."""
    for _ in range(warmup):
        fn()
    times = []
    start = time.perf_counter()
    while len(times) < repeat and (len(times) < 3 or time.perf_counter() - start < budget_s):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def cpu_read_seconds(array: np.ndarray) -> float:
    """Time to read ``array`` once with the kernels' own threads and SIMD: the floor of a scan over it.

    Measured on the very buffer the kernel reads, so both see the same caches.
    """
    import fastspec.arrays

    words = np.ascontiguousarray(array).view(np.uint64).reshape(-1)
    read = fastspec.arrays.module().read_once_cpu
    return median_seconds(lambda: read(words.ctypes.data, words.size))


def machine() -> dict:
    return {
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
    }


def write_json(name: str, payload: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2))
    return path


def report(name: str, payload: dict) -> int:
    """Writes ``payload`` and the machine to ``bench/results/<name>.json``, says where, and returns the exit
    status of a benchmark that finished."""
    path = write_json(name, {**payload, "machine": machine()})
    print(f"wrote {path}")
    return 0


def report_batches(name: str, batches, measure: Callable[[int], dict], line: Callable[[dict], str]) -> int:
    """A CPU benchmark of one record a batch size: ``measure(batch)`` with gradients off, each record printed as
    ``line(record)`` as it comes, then all reported as ``bench/results/<name>.json``."""
    import paddle

    records = []
    with paddle.no_grad():
        for batch in batches:
            records.append(measure(batch))
            print(line(records[-1]), flush=True)
    return report(name, {"benchmark": name, "device": "cpu", "records": records})


def fmt_time(seconds: float) -> str:
    return f"{seconds * 1e3:9.3f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:9.1f} us"


def cuda_seconds(fn: Callable[[], object], repeat: int = 50) -> float:
    """Median device time of ``fn`` between two CUDA events, after 5 warm-up calls (needs PyTorch)."""
    import torch

    for _ in range(5):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(repeat):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return sorted(times)[len(times) // 2]


def cuda_read_bandwidth() -> float:
    """Bytes per second of a 2 GiB device reduction: the HBM read rate the floors divide by."""
    import torch

    data = torch.ones(1 << 28, dtype=torch.int64, device="cuda")
    return data.numel() * 8 / cuda_seconds(lambda: data.max(), repeat=10)


def cuda_launch_seconds(calls: int = 100) -> float:
    """One tiny kernel node in a replayed CUDA Graph: the floor of a launch-bound op (needs PyTorch)."""
    import torch

    from tests.helpers.cuda import capture

    empty = torch.empty(1, device="cuda")
    return cuda_seconds(capture(lambda: [empty.zero_() for _ in range(calls)]).replay) / calls

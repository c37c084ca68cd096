"""Where the tests/gpu cases run, moving numpy cases there and back, and CUDA Graph capture.

``target`` is the real GPU (torch CUDA tensors, the kernels on the framework's stream) where one
is visible and the bindings have CUDA; otherwise the host emulation of a CUDA device (CPU torch
tensors and ``backend="cuda_emulator"``, each launch in the next block order of
tests/helpers/devices.py's CUDA launches). A test writes ``.to(target.device)``,
``device=target.device``, ``**target.kw`` on every kernel call and ``target.synchronize()``, and
runs unchanged on both. Tests that need the device itself (CUDA Graphs, streams, raw device
pointers) are marked ``needs_gpu`` and skipped on the emulator (tests/gpu/conftest.py).
"""

from __future__ import annotations

import zlib
from typing import Callable, Iterable

import numpy as np
import torch

from tests.helpers.devices import CUDA

EMULATED_CASES = 10  # random cases per test on the emulator (the GPU runs the CPU tests' hundreds)


def gpu_unavailable() -> str | None:
    """Why the kernels cannot run on a real GPU here (None: they can)."""
    if not torch.cuda.is_available():
        return "no CUDA device"
    import fastspec.arrays

    try:
        return None if fastspec.arrays.module().with_cuda else "bindings built without CUDA"
    except ImportError as error:
        return str(error)


class CudaTarget:
    """The GPU, or the CUDA emulator standing in for it."""

    def __init__(self, emulated: bool) -> None:
        self.emulated = emulated
        self.device = "cpu" if emulated else "cuda"
        self._launch = 0

    def start(self, test_id: str) -> None:
        """Each test starts at its own block order (on the emulator), the same on every run."""
        self._launch = zlib.crc32(test_id.encode())

    @property
    def kw(self) -> dict:
        """The keyword arguments of the next kernel call: none on the GPU, the emulator and a block order."""
        if not self.emulated:
            return {}
        self._launch += 1
        return CUDA.launch(self._launch)

    def cases(self, on_gpu: int) -> int:
        """How many random cases a test runs: all of them on the GPU, a few on the (slower) emulator."""
        return min(on_gpu, EMULATED_CASES) if self.emulated else on_gpu

    def skip_slow_dtype(self, dtype: str, vocab: int) -> None:
        """On the emulator a 151936-token vocabulary runs in float32 only (seconds per dtype there);
        the 16-bit dtypes run at 32000."""
        if self.emulated and vocab >= 151936 and dtype != "float32":
            import pytest  # the benchmarks import this module without pytest

            pytest.skip("the CUDA emulator runs V = 151936 in float32 only (16-bit dtypes at V = 32000)")

    def synchronize(self) -> None:
        if not self.emulated:
            torch.cuda.synchronize()


target = CudaTarget(emulated=gpu_unavailable() is not None)


def tensor(array: np.ndarray) -> torch.Tensor:
    """A copy of ``array`` on the target (a copy on the emulator too: the kernels write in place)."""
    return torch.from_numpy(np.ascontiguousarray(array)).to(target.device, copy=True)


def to_device(arrays: dict[str, np.ndarray | None]) -> dict[str, torch.Tensor | None]:
    """Copies of ``arrays`` on the target; an absent optional input (None) stays None."""
    return {name: None if value is None else tensor(value) for name, value in arrays.items()}


def to_host(tensors: dict[str, torch.Tensor | None]) -> dict[str, np.ndarray | None]:
    return {name: None if value is None else value.cpu().numpy() for name, value in tensors.items()}


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
        if value is not None:
            tensors[name].copy_(torch.from_numpy(np.ascontiguousarray(value)))


def shaped_like(arrays: dict[str, np.ndarray], captured: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A new random case cut to a captured graph's shapes (the cases draw K per case): new contents,
    the captured shapes and dtypes."""
    return {name: np.resize(arrays[name], captured[name].shape).astype(captured[name].dtype) for name in captured}


def replay_on_new_inputs(
    step: Callable[[], None],
    tensors: dict[str, torch.Tensor],
    cases: Iterable[dict],
    check: Callable[[dict, dict, int], None],
) -> None:
    """Captures ``step`` over ``tensors`` once; then per case writes its arrays into the captured buffers,
    replays and calls ``check(case, what the buffers hold on the host, replay index)``."""
    graph = capture(step)
    for index, arrays in enumerate(cases):
        copy_into(tensors, arrays)
        graph.replay()
        torch.cuda.synchronize()
        check(arrays, to_host(tensors), index)


def check_ngram_replays(op: str, random_case: Callable, seed: int, replays: int = 5) -> None:
    """An n-gram op captured on a 16-slot case and replayed on new cases of its shapes: each equals the reference."""
    import fastspec.arrays
    from tests.helpers import ngram_harness as harness
    from tests.helpers.ngram_cases import ARRAY_NAMES

    rng = np.random.default_rng(seed)
    first, attrs = random_case(rng, batch=16, max_model_len=256)
    attrs["token_budget"] = 40
    tensors = to_device(first)
    cases = (shaped_like(random_case(rng, batch=16, max_model_len=256)[0], first) for _ in range(replays))

    def check(arrays: dict, out: dict, index: int) -> None:
        harness.assert_same(
            (out["draft_tokens"], out["seq_lens_this_time"]),
            harness.run_reference(op, arrays, attrs),
            f"{op} replay {index}",
        )

    replay_on_new_inputs(
        lambda: getattr(fastspec.arrays, op)(*(tensors[name] for name in ARRAY_NAMES), **attrs), tensors, cases, check
    )


def run_op(op: str, arrays: dict[str, np.ndarray], names: Iterable[str]):
    """fastspec.arrays' ``op`` on the target, its arguments ``arrays[name]`` for ``names``; waits for it."""
    import fastspec.arrays

    result = getattr(fastspec.arrays, op)(*(tensor(arrays[n]) for n in names), **target.kw)
    target.synchronize()
    return result


def run_ngram_cuda(op: str, arrays: dict[str, np.ndarray], attrs: dict) -> tuple[np.ndarray, np.ndarray]:
    """An n-gram kernel (``ngram_match`` / ``ngram_append``) on the target through the bindings."""
    import fastspec.arrays
    from tests.helpers.ngram_cases import ARRAY_NAMES

    tensors = to_device(arrays)
    getattr(fastspec.arrays, op)(*(tensors[name] for name in ARRAY_NAMES), **attrs, **target.kw)
    target.synchronize()
    out = to_host(tensors)
    return out["draft_tokens"], out["seq_lens_this_time"]


def check_ngram_random_batches(op: str, seed: int, cases: int = 300) -> None:
    """An n-gram kernel equals the reference on ``cases`` random batches drawn from ``seed`` (fewer on the
    emulator)."""
    from tests.helpers import ngram_harness as harness

    rng = np.random.default_rng(seed)
    for case in range(target.cases(cases)):
        arrays, attrs = harness.RANDOM_CASES[op](rng)
        expected = harness.run_reference(op, arrays, attrs)
        harness.assert_same(run_ngram_cuda(op, arrays, attrs), expected, f"seed {seed} case {case} {attrs}")

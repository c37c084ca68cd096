"""CUDA apply_token_bitmask against the numpy reference, bit for bit, in every logits dtype (V = 151936
included), and a captured mask replayed on new masks and indices.

Runs the kernel through the pybind11 bindings on PyTorch tensors (no Paddle on the GPU host); on the CUDA
emulator without a GPU, everything but the graph replay (`needs_gpu`)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")  # the whole module needs PyTorch

import numpy as np

import fastspec.arrays
from tests.helpers import bitmask_cases as cases
from tests.helpers.cuda import capture, copy_into, target, tensor


def logits_on_device(host: np.ndarray) -> torch.Tensor:
    """The logits on the target; bfloat16 (uint16 bits on the host) as a torch bfloat16 tensor."""
    if host.dtype == np.uint16:
        return torch.from_numpy(host.view(np.int16)).to(target.device, copy=True).view(torch.bfloat16)
    return tensor(host)


def run_cuda(arrays: dict) -> np.ndarray:
    logits = logits_on_device(arrays["logits"])
    fastspec.arrays.apply_token_bitmask(
        logits, tensor(arrays["token_bitmask"]), tensor(arrays["bitmask_index"]), **target.kw
    )
    target.synchronize()
    if logits.dtype == torch.bfloat16:
        return logits.view(torch.int16).cpu().numpy().view(np.uint16)
    return logits.cpu().numpy()


def test_random_calls_match_the_reference():
    for i, (arrays, attrs) in enumerate(cases.cases(seed=47, count=target.cases(400))):
        cases.assert_bit_equal(run_cuda(arrays), cases.run_reference(arrays, attrs), f"case {i}")


@pytest.mark.parametrize("dtype", cases.DTYPES)
def test_large_vocab(dtype):
    target.skip_slow_dtype(dtype, 151936)
    rng = np.random.default_rng(len(dtype) + 7)
    arrays, attrs = cases.case(rng, rows=6, vocab=151936, dtype=dtype)
    arrays["bitmask_index"] = np.array([0, -1, 0, 1, 2**31 - 1, 0], np.int32)[: len(arrays["bitmask_index"])]
    cases.assert_bit_equal(run_cuda(arrays), cases.run_reference(arrays, attrs))


@pytest.mark.needs_gpu
def test_graph_replay():
    """One capture, replayed on new masks and indices written into its buffers."""
    rng = np.random.default_rng(5)
    first, _ = cases.case(rng, rows=8, vocab=5000, dtype="float32")
    device = {name: tensor(value) for name, value in first.items()}
    source = device["logits"].clone()

    def step() -> None:
        device["logits"].copy_(source)
        fastspec.arrays.apply_token_bitmask(device["logits"], device["token_bitmask"], device["bitmask_index"])

    graph = capture(step)
    for i in range(3):
        new, _ = cases.case(rng, rows=8, vocab=5000, dtype="float32")
        new = {name: np.resize(new[name], first[name].shape).astype(first[name].dtype) for name in first}
        copy_into(
            {"token_bitmask": device["token_bitmask"], "bitmask_index": device["bitmask_index"]},
            {"token_bitmask": new["token_bitmask"], "bitmask_index": new["bitmask_index"]},
        )
        source.copy_(torch.from_numpy(new["logits"]))
        graph.replay()
        torch.cuda.synchronize()
        cases.assert_bit_equal(device["logits"].cpu().numpy(), cases.run_reference(new, {}), f"replay {i}")

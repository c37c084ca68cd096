"""CUDA temperature_softmax against the numpy reference, bit for bit (V = 32000 and 151936 included), and a
captured softmax replayed on new logits and temperatures.

Runs the kernel through the pybind11 bindings on PyTorch tensors (no Paddle on the GPU host); on the CUDA
emulator without a GPU, everything but the graph replay (`needs_gpu`)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")  # the whole module needs PyTorch

import numpy as np

import fastspec.arrays
from tests.helpers import softmax_cases as cases
from tests.helpers.cuda import capture, copy_into, target, tensor


def run_cuda(arrays: dict) -> np.ndarray:
    probs = fastspec.arrays.temperature_softmax(*(tensor(arrays[n]) for n in cases.NAMES), **target.kw)
    target.synchronize()
    return probs.cpu().numpy()


def test_random_calls_match_the_reference():
    for i, (arrays, attrs) in enumerate(cases.cases(seed=19, count=target.cases(400))):
        cases.assert_bit_equal(run_cuda(arrays), cases.run_reference(arrays, attrs), f"case {i}")


@pytest.mark.parametrize("vocab", [32000, 151936])
def test_large_vocab(vocab):
    arrays, attrs = cases.case(np.random.default_rng(vocab + 1), rows=4, vocab=vocab, batch=4)
    arrays["batch_id_per_token_output"] = np.array([0, 1, 2, 3], np.int32)
    cases.assert_bit_equal(run_cuda(arrays), cases.run_reference(arrays, attrs))


@pytest.mark.needs_gpu
def test_graph_replay():
    """One capture, replayed on new logits and temperatures written into its buffers."""
    rng = np.random.default_rng(5)
    first, _ = cases.case(rng, rows=8, vocab=5000, batch=4)
    device = {name: tensor(value) for name, value in first.items()}
    out = {}

    def step() -> None:
        out["probs"] = fastspec.arrays.temperature_softmax(*(device[n] for n in cases.NAMES))

    graph = capture(step)
    for i in range(3):
        new, _ = cases.case(rng, rows=8, vocab=5000, batch=4)
        copy_into(device, new)
        graph.replay()
        torch.cuda.synchronize()
        cases.assert_bit_equal(out["probs"].cpu().numpy(), cases.run_reference(new, {}), f"replay {i}")

"""CUDA emitted_logprobs against the numpy reference, bit for bit (V = 32000 and 151936 included), and a
captured call replayed on new logits and emitted tokens.

Runs the kernel through the pybind11 bindings on PyTorch tensors (no Paddle on the GPU host); on the CUDA
emulator without a GPU, everything but the graph replay (`needs_gpu`)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")  # the whole module needs PyTorch

import numpy as np

import fastspec.arrays
from tests.helpers import logprobs_cases as cases
from tests.helpers.cuda import capture, copy_into, target, tensor


def run_cuda(arrays: dict, attrs: dict) -> np.ndarray:
    given = (None if arrays[n] is None else tensor(arrays[n]) for n in cases.NAMES)
    keys = fastspec.arrays.emitted_logprobs(*given, **attrs, **target.kw)
    target.synchronize()
    return keys.cpu().numpy()


def test_random_calls_match_the_reference():
    for i, (arrays, attrs) in enumerate(cases.cases(seed=29, count=target.cases(300))):
        cases.assert_bit_equal(run_cuda(arrays, attrs), cases.run_reference(arrays, attrs), f"case {i}")


@pytest.mark.parametrize("vocab", [32000, 151936])
def test_large_vocab(vocab):
    arrays, attrs = cases.case(np.random.default_rng(vocab + 3), batch=2, vocab=vocab, width=20)
    cases.assert_bit_equal(run_cuda(arrays, attrs), cases.run_reference(arrays, attrs))


@pytest.mark.needs_gpu
def test_graph_replay():
    """One capture, replayed on new logits, temperatures and emitted tokens written into its buffers."""
    rng = np.random.default_rng(5)
    first, attrs = cases.case(rng, batch=4, vocab=5000, width=20, tree=False)
    device = {name: tensor(value) for name, value in first.items() if value is not None}
    out = {}

    def step() -> None:
        out["keys"] = fastspec.arrays.emitted_logprobs(*(device.get(n) for n in cases.NAMES), **attrs)

    graph = capture(step)
    for i in range(3):
        new, _ = cases.case(rng, batch=4, vocab=5000, width=20, tree=False)
        new["logits"] = np.resize(new["logits"], first["logits"].shape).astype(np.float32)
        for name in ("cu_seqlens_q_output", "accept_tokens", "accept_num"):
            new[name] = np.resize(new[name], first[name].shape).astype(first[name].dtype)
        new["accept_tokens"] %= 5000
        copy_into(device, {n: v for n, v in new.items() if v is not None})
        graph.replay()
        torch.cuda.synchronize()
        cases.assert_bit_equal(out["keys"].cpu().numpy(), cases.run_reference(new, attrs), f"replay {i}")

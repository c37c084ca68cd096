"""CUDA top_k_top_p_probs against the numpy reference, bit for bit, and CUDA Graph replay.

Small cases are named `spec_example` / `graph_replay` so tests/gpu/run_gpu_checks.sh and
tests/gpu/run_sanitizer.sh run them under compute-sanitizer.

On the CUDA emulator without a GPU: everything but the graph replay (`needs_gpu`), the same cases
except V = 151936 in float32 only.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")  # the whole module needs PyTorch

import numpy as np

import fastspec.arrays
from fastspec import reference as ref
from tests.gpu.test_sampling_cuda import dev, device_probs
from tests.helpers.cuda import capture, copy_into, target
from tests.helpers.sampling_cases import make_batch, make_probs, min_p_values, probs_case, request_params, softmax


def cuda_probs(probs_dev, top_p, top_k, batch_id, min_p=None):
    out = torch.full(tuple(probs_dev.shape), 5.0, dtype=torch.float32, device=target.device)  # garbage: all written
    per_row = (dev(batch_id), None if min_p is None else dev(min_p))
    fastspec.arrays.top_k_top_p_probs(probs_dev, dev(top_p), dev(top_k), *per_row, target_probs=out, **target.kw)
    target.synchronize()
    return out.cpu().numpy()


def assert_bits(got, want, context=""):
    differ = np.argwhere(got.view(np.uint32) != want.view(np.uint32))
    assert len(differ) == 0, f"{len(differ)} entries differ, first {differ[:4].tolist()} {context}"


def test_spec_example_rows():
    probs = np.array(
        [
            [0.125, 0.375, 0.125, 0.125, 0.125, 0.125],
            [np.nan, 0, 0, 0, 0, 0],
            [0.125, 0.375, 0.125, 0.125, 0.125, 0.125],
            [2.0**-45, 2.0**-41, 0, 0, 0, 0],
        ],
        np.float32,
    )
    top_p, top_k = np.array([1.0, 0.3], np.float32), np.array([2, 0], np.int32)
    batch_id = np.array([0, 1, -1, 1], np.int32)
    got = cuda_probs(dev(probs), top_p, top_k, batch_id)
    assert got[0].tolist() == [0.25, 0.75, 0.0, 0.0, 0.0, 0.0] and (got[1:3] == 0).all()
    assert got[3].tolist() == [0.0, 1.0, 0.0, 0.0, 0.0, 0.0]  # a massless set: its first token
    assert_bits(got, ref.top_k_top_p_probs(probs, top_p, top_k, batch_id))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("vocab", [1, 7, 300, 32000, 151936])
def test_matches_reference(dtype, vocab):
    target.skip_slow_dtype(dtype, vocab)
    rows_per_request = [1, 3, 2, 1, 4, 1, 2, 5] if vocab < 32000 else [1, 2, 1, 3]
    probs, top_p, top_k, batch_id = probs_case(np.random.default_rng(vocab + 29), vocab, rows_per_request)
    probs_dev, host = device_probs(probs, dtype)
    assert_bits(cuda_probs(probs_dev, top_p, top_k, batch_id), ref.top_k_top_p_probs(host, top_p, top_k, batch_id))


def test_near_uniform_rows_and_large_top_k():
    rng = np.random.default_rng(31)
    vocab = 151937
    probs = np.stack([softmax(rng.normal(0, 1e-3, vocab)) for _ in range(4)])
    top_p = np.array([0.9, 0.99, 0.5, 1.0], np.float32)
    top_k = np.array([0, 0, 9000, 20000], np.int32)
    batch_id = np.arange(4, dtype=np.int32)
    assert_bits(cuda_probs(dev(probs), top_p, top_k, batch_id), ref.top_k_top_p_probs(probs, top_p, top_k, batch_id))


@pytest.mark.slow
def test_cuda_matches_cpu_kernel_on_many_rows():
    """Many rows at a mid vocabulary: the CUDA kernel against the CPU kernel (itself tested against the reference)."""
    rng = np.random.default_rng(99)
    probs, top_p, top_k, batch_id = probs_case(rng, 4096, [int(x) for x in rng.integers(1, 5, 100)], padding_rows=5)
    cpu = np.zeros(probs.shape, np.float32)
    fastspec.arrays.top_k_top_p_probs(probs, top_p, top_k, batch_id, target_probs=cpu)
    assert_bits(cuda_probs(dev(probs), top_p, top_k, batch_id), cpu)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("vocab", [1, 7, 300, 32000])
def test_min_p_matches_reference(dtype, vocab):
    target.skip_slow_dtype(dtype, vocab)
    rng = np.random.default_rng(vocab + 23)
    probs, top_p, top_k, batch_id = probs_case(rng, vocab, (1, 3, 2, 1, 4, 1, 2, 5) if vocab < 32000 else (1, 2, 1))
    min_p = min_p_values(rng, len(top_p))
    probs_dev, host = device_probs(probs, dtype)
    assert_bits(
        cuda_probs(probs_dev, top_p, top_k, batch_id, min_p), ref.top_k_top_p_probs(host, top_p, top_k, batch_id, min_p)
    )


@pytest.mark.needs_gpu
def test_graph_replay_with_new_probabilities():
    rng = np.random.default_rng(8)
    vocab = 1000
    _, batch_id = make_batch(rng, [2, 1, 3, 2], padding_rows=1)
    rows = len(batch_id)
    arrays = {"probs": make_probs(rng, vocab, rows)}
    arrays["top_p"], arrays["top_k"], _, _ = request_params(rng, 4, vocab)
    arrays["min_p"] = min_p_values(rng, 4)
    arrays["batch_id"] = batch_id
    t = {name: dev(value) for name, value in arrays.items()}
    out = torch.zeros((rows, vocab), dtype=torch.float32, device=target.device)

    def step():
        per_row = (t["batch_id"], t["min_p"])
        fastspec.arrays.top_k_top_p_probs(t["probs"], t["top_p"], t["top_k"], *per_row, target_probs=out)

    graph = capture(step)
    for replay in range(3):
        new = {"probs": make_probs(rng, vocab, rows), "min_p": min_p_values(rng, 4)}
        new["top_p"], new["top_k"], _, _ = request_params(rng, 4, vocab)
        copy_into(t, new)
        graph.replay()
        torch.cuda.synchronize()
        assert_bits(
            out.cpu().numpy(),
            ref.top_k_top_p_probs(new["probs"], new["top_p"], new["top_k"], batch_id, new["min_p"]),
            f"replay {replay}",
        )

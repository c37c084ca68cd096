"""CUDA top_p_candidates / sample_tokens against the numpy reference, bit for bit, and CUDA Graph replay.

Small cases are named `spec_example` / `graph_replay` so tests/gpu/run_gpu_checks.sh and
tests/gpu/run_sanitizer.sh run them under compute-sanitizer.

On the CUDA emulator without a GPU: everything but the graph replays (`needs_gpu`), the same cases
except V = 151936 in float32 only.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")  # the whole module needs PyTorch

import numpy as np

from fastspec import arrays
from fastspec import reference as ref
from tests.helpers import sampling_cases as cases
from tests.helpers.cuda import replay_on_new_inputs, target, tensor


def device_probs(probs: np.ndarray, dtype: str) -> tuple[torch.Tensor, np.ndarray]:
    """The probabilities on the device in `dtype`, and the host array the reference reads."""
    if dtype == "float32":
        host = np.ascontiguousarray(probs, np.float32)
        return torch.from_numpy(host).to(target.device, copy=True), host
    if dtype == "float16":
        host = probs.astype(np.float16)
        return torch.from_numpy(host).to(target.device, copy=True), host
    host = cases.to_bf16_bits(probs)
    return torch.from_numpy(host.view(np.int16)).to(target.device, copy=True).view(torch.bfloat16), host


def dev(x: np.ndarray) -> torch.Tensor:
    return tensor(x)


def cuda_candidates(probs_dev, top_p, batch_id, k, min_p=None):
    rows = probs_dev.shape[0]
    ids = torch.full((rows, k), 777, dtype=torch.int64, device=target.device)  # garbage: all must be written
    scores = torch.full((rows, k), 5.0, dtype=torch.float32, device=target.device)
    lens = torch.full((rows,), 999, dtype=torch.int32, device=target.device)
    arrays.top_p_candidates(
        probs_dev,
        dev(top_p),
        dev(batch_id),
        None if min_p is None else dev(min_p),
        candidate_ids=ids,
        candidate_scores=scores,
        candidate_lens=lens,
        max_candidate_len=k,
        **target.kw,
    )
    target.synchronize()
    return ids.cpu().numpy(), scores.cpu().numpy(), lens.cpu().numpy()


def cuda_sample(probs_dev, top_p, top_k, seed, step, batch_id, cu, rand_stream=ref.STREAM_TARGET, min_p=None):
    tokens = torch.full((probs_dev.shape[0],), 777, dtype=torch.int64, device=target.device)
    arrays.sample_tokens(
        probs_dev,
        *(dev(x) for x in (top_p, top_k, seed, step, batch_id, cu)),
        None if min_p is None else dev(min_p),
        tokens=tokens,
        rand_stream=rand_stream,
        **target.kw,
    )
    target.synchronize()
    return tokens.cpu().numpy()


def assert_candidates_equal(got, expected):
    for name, g, e in zip(("candidate_ids", "candidate_scores", "candidate_lens"), got, expected):
        assert np.array_equal(np.ascontiguousarray(g).view(np.uint8), np.ascontiguousarray(e).view(np.uint8)), (
            f"{name} differs at {np.argwhere(g != e)[:5].tolist()}"
        )


def test_spec_example_candidates_and_sample():
    probs = np.array([[0.1, 0.5, 0.2, 0.2, 0.0], [np.nan, 0, 0, 0, 0], [0.25, 0.25, 0.25, 0.25, 0.0]], np.float32)
    top_p = np.array([0.6, 0.5], np.float32)
    batch_id = np.array([0, 1, 1], np.int32)
    got = cuda_candidates(dev(probs), top_p, batch_id, 3)
    assert_candidates_equal(got, ref.top_p_candidates(probs, top_p, batch_id, max_candidate_len=3))
    assert got[0][0].tolist() == [1, 2, -1] and got[2].tolist() == [2, 0, 2]
    top_k = np.array([0, 2], np.int32)
    seed = np.array([1, 2], np.int64)
    step = np.array([0, 5], np.int64)
    cu = np.array([0, 1, 3], np.int32)
    assert np.array_equal(
        cuda_sample(dev(probs), top_p, top_k, seed, step, batch_id, cu),
        ref.sample_tokens(probs, top_p, top_k, seed, step, batch_id, cu),
    )


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("vocab", [1, 7, 300, 32000])
@pytest.mark.parametrize("k", [1, 5, 64, 1024])
def test_candidates_match_reference(dtype, vocab, k):
    k = min(k, vocab)
    rng = np.random.default_rng(vocab * 31 + k)
    rows = 2 * len(cases.KINDS) if vocab < 32000 else len(cases.KINDS)
    probs = cases.make_probs(rng, vocab, rows)
    top_p = np.array(cases.TOP_PS + cases.TOP_P_ODD, np.float32)
    batch_id = rng.integers(-1, len(top_p) + 1, rows).astype(np.int32)
    probs_dev, host = device_probs(probs, dtype)
    expected = ref.top_p_candidates(host, top_p, batch_id, max_candidate_len=k)
    assert_candidates_equal(cuda_candidates(probs_dev, top_p, batch_id, k), expected)


@pytest.mark.parametrize("k", [1, 64, 1024])
def test_candidates_large_vocab(k):
    rng = np.random.default_rng(k)
    probs = cases.make_probs(rng, 151936, 4, kinds=("peaked", "uniform", "ties", "special"))
    top_p = np.array([0.95, 0.5, 1.0, 1e-6], np.float32)
    batch_id = np.arange(4, dtype=np.int32)
    expected = ref.top_p_candidates(probs, top_p, batch_id, max_candidate_len=k)
    assert_candidates_equal(cuda_candidates(dev(probs), top_p, batch_id, k), expected)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("vocab", [1, 7, 300, 32000, 151936])
def test_sample_matches_reference(dtype, vocab):
    target.skip_slow_dtype(dtype, vocab)
    rows_per_request = [1, 3, 2, 1, 4, 1, 2, 5] if vocab < 32000 else [1, 2, 1, 3]
    probs, *args = cases.sample_case(np.random.default_rng(vocab + 3), vocab, rows_per_request)
    probs_dev, host = device_probs(probs, dtype)
    for stream in (ref.STREAM_TARGET, ref.STREAM_DRAFT):
        assert np.array_equal(cuda_sample(probs_dev, *args, stream), ref.sample_tokens(host, *args, stream=stream))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("vocab", [1, 7, 300, 32000])
def test_min_p_matches_reference(dtype, vocab):
    """sample_tokens and top_p_candidates with min_p per request (edge values included)."""
    target.skip_slow_dtype(dtype, vocab)
    rng = np.random.default_rng(vocab + 19)
    rows_per_request = [1, 3, 2, 1, 4, 1, 2, 5] if vocab < 32000 else [1, 2, 1, 3]
    probs, *args = cases.sample_case(rng, vocab, rows_per_request)
    top_p, _, _, _, batch_id, _ = args
    min_p = cases.min_p_values(rng, len(top_p))
    probs_dev, host = device_probs(probs, dtype)
    got = cuda_sample(probs_dev, *args, min_p=min_p)
    assert np.array_equal(got, ref.sample_tokens(host, *args, min_p))
    k = min(64, vocab)
    expected = ref.top_p_candidates(host, top_p, batch_id, min_p, max_candidate_len=k)
    assert_candidates_equal(cuda_candidates(probs_dev, top_p, batch_id, k, min_p), expected)


def test_sample_large_vocab():
    probs, *args = cases.large_vocab_case(np.random.default_rng(5))
    assert np.array_equal(cuda_sample(dev(probs), *args), ref.sample_tokens(probs, *args))


@pytest.mark.slow
def test_cuda_matches_cpu_kernel_on_many_rows():
    """Many rows at a mid vocabulary: the CUDA kernel against the CPU kernel (itself tested against the reference)."""
    rng = np.random.default_rng(99)
    probs, *args = cases.sample_case(rng, 4096, [int(x) for x in rng.integers(1, 5, 100)], padding_rows=5)
    top_p, _, _, _, batch_id, _ = args
    tokens = np.zeros(len(batch_id), np.int64)
    arrays.sample_tokens(probs, *args, tokens=tokens)
    assert np.array_equal(cuda_sample(dev(probs), *args), tokens)
    rows = len(batch_id)
    ids, scores, lens = np.zeros((rows, 100), np.int64), np.zeros((rows, 100), np.float32), np.zeros(rows, np.int32)
    arrays.top_p_candidates(
        probs, top_p, batch_id, candidate_ids=ids, candidate_scores=scores, candidate_lens=lens, max_candidate_len=100
    )
    assert_candidates_equal(cuda_candidates(dev(probs), top_p, batch_id, 100), (ids, scores, lens))


def test_bad_sizes_are_errors():
    probs = dev(np.ones((2, 10), np.float32))
    ids = torch.zeros((2, 11), dtype=torch.int64, device=target.device)
    scores = torch.zeros((2, 11), dtype=torch.float32, device=target.device)
    lens = torch.zeros(2, dtype=torch.int32, device=target.device)
    with pytest.raises(ValueError, match="max_candidate_len"):
        arrays.top_p_candidates(
            probs,
            dev(np.ones(1, np.float32)),
            dev(np.zeros(2, np.int32)),
            candidate_ids=ids,
            candidate_scores=scores,
            candidate_lens=lens,
            max_candidate_len=11,
            **target.kw,
        )


@pytest.mark.needs_gpu
@pytest.mark.parametrize("stream", [ref.STREAM_TARGET, ref.STREAM_DRAFT])
def test_graph_replay_with_new_probabilities_and_seeds(stream):
    """sample_tokens (on either random stream) and top_p_candidates captured once, replayed on new
    probabilities, top-p, top-k, seeds and steps."""
    rng = np.random.default_rng(8 + stream)
    vocab, k = 1000, 32
    cu, batch_id = cases.make_batch(rng, [2, 1, 3, 2], padding_rows=1)
    rows = len(batch_id)

    def requests() -> dict:
        new = {"probs": cases.make_probs(rng, vocab, rows), "min_p": cases.min_p_values(rng, 4)}
        new["top_p"], new["top_k"], new["seed"], new["step_idx"] = cases.request_params(rng, 4, vocab)
        return new

    t = {name: dev(value) for name, value in {**requests(), "batch_id": batch_id, "cu": cu}.items()}
    t.update(
        tokens=torch.zeros(rows, dtype=torch.int64, device=target.device),
        ids=torch.zeros((rows, k), dtype=torch.int64, device=target.device),
        scores=torch.zeros((rows, k), dtype=torch.float32, device=target.device),
        lens=torch.zeros(rows, dtype=torch.int32, device=target.device),
    )

    def step():
        sample_inputs = ("probs", "top_p", "top_k", "seed", "step_idx", "batch_id", "cu", "min_p")
        arrays.sample_tokens(*(t[n] for n in sample_inputs), tokens=t["tokens"], rand_stream=stream)
        arrays.top_p_candidates(
            *(t[n] for n in ("probs", "top_p", "batch_id", "min_p")),
            candidate_ids=t["ids"],
            candidate_scores=t["scores"],
            candidate_lens=t["lens"],
            max_candidate_len=k,
        )

    def check(new: dict, out: dict, replay: int) -> None:
        per_request = (new["seed"], new["step_idx"], batch_id, cu, new["min_p"])
        expected = ref.sample_tokens(new["probs"], new["top_p"], new["top_k"], *per_request, stream=stream)
        assert np.array_equal(out["tokens"], expected), replay
        assert_candidates_equal(
            tuple(out[n] for n in ("ids", "scores", "lens")),
            ref.top_p_candidates(new["probs"], new["top_p"], batch_id, new["min_p"], max_candidate_len=k),
        )

    replay_on_new_inputs(step, t, (requests() for _ in range(3)), check)


# ---- the random stream: DRAFT (a draft model's samples) ----------------------------------------


def test_spec_example_draft_stream():
    probs = np.array([[0.1, 0.5, 0.2, 0.2, 0.0], [np.nan, 0, 0, 0, 0], [0.25, 0.25, 0.25, 0.25, 0.0]], np.float32)
    args = (
        np.array([0.6, 0.5], np.float32),
        np.array([0, 2], np.int32),
        np.array([1, 2], np.int64),
        np.array([0, 5], np.int64),
        np.array([0, 1, 1], np.int32),
        np.array([0, 1, 3], np.int32),
    )
    assert np.array_equal(
        cuda_sample(dev(probs), *args, ref.STREAM_DRAFT), ref.sample_tokens(probs, *args, stream=ref.STREAM_DRAFT)
    )


def test_draft_stream_differs_from_target_and_matches_cpu():
    rng = np.random.default_rng(707)
    requests, rows_each, vocab = 64, 4, 1000
    cu = np.arange(0, requests * rows_each + 1, rows_each, dtype=np.int32)
    batch_id = np.repeat(np.arange(requests, dtype=np.int32), rows_each)
    logits = rng.normal(0, 0.05, (len(batch_id), vocab))
    probs = (np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)).astype(np.float32)
    args = (
        np.ones(requests, np.float32),
        np.zeros(requests, np.int32),
        rng.integers(-(2**63), 2**63 - 1, requests, dtype=np.int64),
        rng.integers(0, 2**20, requests, dtype=np.int64),
        batch_id,
        cu,
    )
    target = cuda_sample(dev(probs), *args, ref.STREAM_TARGET)
    draft = cuda_sample(dev(probs), *args, ref.STREAM_DRAFT)
    cpu = np.zeros(len(batch_id), np.int64)
    arrays.sample_tokens(probs, *args, tokens=cpu, rand_stream=ref.STREAM_DRAFT)
    assert np.array_equal(draft, cpu)
    assert (target >= 0).all() and (draft >= 0).all()
    assert (target != draft).mean() > 0.9


@pytest.mark.parametrize("bad", [0, 2, 4, 6])
def test_bad_stream_is_an_error(bad):
    probs = dev(np.full((2, 10), 0.1, np.float32))
    args = [
        dev(x)
        for x in (
            np.ones(1, np.float32),
            np.zeros(1, np.int32),
            np.zeros(1, np.int64),
            np.zeros(1, np.int64),
            np.zeros(2, np.int32),
            np.array([0, 2], np.int32),
        )
    ]
    tokens = torch.zeros(2, dtype=torch.int64, device=target.device)
    with pytest.raises(ValueError, match="stream"):
        arrays.sample_tokens(probs, *args, tokens=tokens, rand_stream=bad, **target.kw)

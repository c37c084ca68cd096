"""top_p_candidates and sample_tokens on the emulated XPU: bit-exact against the reference for every
row kind, dtype and vocabulary size the CPU tests use, on every grid, clusters forward and reversed."""

from __future__ import annotations

import numpy as np
import pytest

from fastspec import arrays as kernels
from fastspec import reference as ref
from tests.helpers.sampling_cases import KINDS, TOP_P_ODD, TOP_PS, make_batch, make_probs, request_params, to_bf16_bits
from tests.xpu.launches import LAUNCHES, describe, launch


def in_dtype(probs: np.ndarray, dtype: str) -> np.ndarray:
    """The probabilities as the kernels and the reference read them (bfloat16 as uint16 bits)."""
    if dtype == "float32":
        return np.ascontiguousarray(probs, np.float32)
    return probs.astype(np.float16) if dtype == "float16" else to_bf16_bits(probs)


def xpu_candidates(probs, top_p, batch_id, k, options):
    rows = probs.shape[0]
    ids = np.full((rows, k), 777, np.int64)  # garbage: every entry must be written
    scores = np.full((rows, k), 5.0, np.float32)
    lens = np.full(rows, 999, np.int32)
    kernels.top_p_candidates(probs, top_p, batch_id, ids, scores, lens, max_candidate_len=k, **options)
    return ids, scores, lens


def xpu_sample(probs, args, options, rand_stream=ref.STREAM_TARGET):
    tokens = np.full(probs.shape[0], 777, np.int64)
    kernels.sample_tokens(probs, *args, tokens, rand_stream=rand_stream, **options)
    return tokens


def assert_candidates_equal(got, expected, context=""):
    for name, g, e in zip(("candidate_ids", "candidate_scores", "candidate_lens"), got, expected):
        assert np.array_equal(np.ascontiguousarray(g).view(np.uint8), np.ascontiguousarray(e).view(np.uint8)), (
            f"{name} differs at {np.argwhere(g != e)[:5].tolist()} {context}")


def check_the_spec_example(options: dict) -> None:
    """top_p_candidates and sample_tokens with launch ``options`` on the docs' example (an emulated device)."""
    probs = np.array([[0.1, 0.5, 0.2, 0.2, 0.0], [np.nan, 0, 0, 0, 0], [0.25, 0.25, 0.25, 0.25, 0.0]], np.float32)
    top_p = np.array([0.6, 0.5], np.float32)
    batch_id = np.array([0, 1, 1], np.int32)
    got = xpu_candidates(probs, top_p, batch_id, 3, options)
    assert got[0][0].tolist() == [1, 2, -1] and got[2].tolist() == [2, 0, 2]
    assert_candidates_equal(got, ref.top_p_candidates(probs, top_p, batch_id, max_candidate_len=3))
    args = (top_p, np.array([0, 2], np.int32), np.array([1, 2], np.int64), np.array([0, 5], np.int64), batch_id,
            np.array([0, 1, 3], np.int32))
    assert np.array_equal(xpu_sample(probs, args, options), ref.sample_tokens(probs, *args))


@pytest.mark.parametrize("options", LAUNCHES, ids=describe)
def test_spec_example(options):
    check_the_spec_example(options)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("vocab", [1, 7, 300, 4096])
@pytest.mark.parametrize("k", [1, 5, 64, 1024])
def test_candidates_match_the_reference(dtype, vocab, k):
    k = min(k, vocab)
    rng = np.random.default_rng(vocab * 31 + k)
    rows = 2 * len(KINDS)
    probs = in_dtype(make_probs(rng, vocab, rows), dtype)
    top_p = np.array(TOP_PS + TOP_P_ODD, np.float32)
    batch_id = rng.integers(-1, len(top_p) + 1, rows).astype(np.int32)
    options = launch(vocab + k)
    expected = ref.top_p_candidates(probs, top_p, batch_id, max_candidate_len=k)
    assert_candidates_equal(xpu_candidates(probs, top_p, batch_id, k, options), expected, describe(options))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("vocab", [1, 7, 300, 4096])
def test_sample_matches_the_reference(dtype, vocab):
    rng = np.random.default_rng(vocab + 3)
    rows_per_request = [1, 3, 2, 1, 4, 1, 2, 5]
    cu, batch_id = make_batch(rng, rows_per_request, padding_rows=3)
    probs = in_dtype(make_probs(rng, vocab, len(batch_id)), dtype)
    top_p, top_k, seed, step = request_params(rng, len(rows_per_request), vocab)
    args = (top_p, top_k, seed, step, batch_id, cu)
    for n, stream in enumerate((ref.STREAM_TARGET, ref.STREAM_DRAFT)):
        options = launch(vocab + n)
        assert np.array_equal(xpu_sample(probs, args, options, stream), ref.sample_tokens(probs, *args, stream=stream)), (
            describe(options))


def test_large_vocabulary_matches_the_reference():
    rng = np.random.default_rng(5)
    cu, batch_id = make_batch(rng, [2, 1, 2], padding_rows=1)
    probs = make_probs(rng, 151936, len(batch_id), kinds=("peaked", "uniform", "ties", "special", "zeros"))
    args = (np.array([0.9, 0.5, 1.0], np.float32), np.array([0, 50, 1000], np.int32), np.array([1, 2, 3], np.int64),
            np.array([10, 0, 99], np.int64), batch_id, cu)
    assert np.array_equal(xpu_sample(probs, args, launch(2)), ref.sample_tokens(probs, *args))
    expected = ref.top_p_candidates(probs, args[0], batch_id, max_candidate_len=64)
    assert_candidates_equal(xpu_candidates(probs, args[0], batch_id, 64, launch(3)), expected)


def test_many_rows_equal_the_cpu_kernel():
    """Rows strided over the clusters: the XPU kernels against the CPU kernels (tested against the reference)."""
    rng = np.random.default_rng(99)
    vocab = 2048
    cu, batch_id = make_batch(rng, [int(x) for x in rng.integers(1, 5, 40)], padding_rows=5)
    probs = make_probs(rng, vocab, len(batch_id))
    args = (*request_params(rng, 40, vocab), batch_id, cu)
    for options in (LAUNCHES[4], LAUNCHES[5]):  # 12 clusters, forward and reversed
        assert np.array_equal(xpu_sample(probs, args, options), xpu_sample(probs, args, {}))
        assert_candidates_equal(xpu_candidates(probs, args[0], batch_id, 100, options),
                                xpu_candidates(probs, args[0], batch_id, 100, {}))

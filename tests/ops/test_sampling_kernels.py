"""CPU kernels of top_p_candidates / sample_tokens (through the pybind11 bindings) vs the numpy reference.

No Paddle needed. Covers every thread count, dtype and edge case bit-exactly, plus the
sampling statistics, argmax, batch invariance and stream independence.
"""

from __future__ import annotations

import numpy as np
import pytest

from fastspec import arrays
from fastspec import reference as ref
from fastspec.reference.mass import prob_mass
from tests.helpers.paths import ROOT
from tests.helpers.sampling_cases import (
    KINDS,
    TOP_P_ODD,
    TOP_PS,
    large_vocab_case,
    make_batch,
    make_probs,
    make_row,
    request_params,
    sample_case,
    softmax,
    to_bf16_bits,
)


def run_candidates(probs, top_p, batch_id, k, num_threads=0):
    rows = probs.shape[0]
    ids = np.full((rows, k), 12345, np.int64)  # garbage: every element must be written
    scores = np.full((rows, k), 7.0, np.float32)
    lens = np.full(rows, 999, np.int32)
    arrays.top_p_candidates(
        np.ascontiguousarray(probs),
        top_p,
        batch_id,
        candidate_ids=ids,
        candidate_scores=scores,
        candidate_lens=lens,
        max_candidate_len=k,
        num_threads=num_threads,
    )
    return ids, scores, lens


def run_sample(probs, top_p, top_k, seed, step_idx, batch_id, cu, num_threads=0):
    tokens = np.full(probs.shape[0], 12345, np.int64)
    arrays.sample_tokens(
        np.ascontiguousarray(probs), top_p, top_k, seed, step_idx, batch_id, cu, tokens=tokens, num_threads=num_threads
    )
    return tokens


def assert_candidates_equal(got, expected):
    for name, g, e in zip(("candidate_ids", "candidate_scores", "candidate_lens"), got, expected):
        assert g.dtype == e.dtype, name
        assert np.array_equal(g.view(np.uint8), np.ascontiguousarray(e).view(np.uint8)), (
            f"{name} differs at {np.argwhere(g != e)[:5].tolist()}"
        )


# ---- arithmetic helpers --------------------------------------------------------------------


def test_f16_converter_is_exact_for_every_pattern():
    m = arrays.module()
    bits = np.arange(1 << 16, dtype=np.uint32)
    expected = bits.astype(np.uint16).view(np.float16).astype(np.float32).view(np.uint32)
    got = np.array([m.f16_to_f32_bits(int(b)) for b in bits], dtype=np.uint32)
    finite = ~np.isnan(bits.astype(np.uint16).view(np.float16))
    assert np.array_equal(got[finite], expected[finite])
    assert np.all(np.isnan(got[~finite].view(np.float32)))


def test_mass_of_bits_matches_reference_mass():
    m = arrays.module()
    rng = np.random.default_rng(1)
    bits = np.concatenate(
        [
            rng.integers(1, 0x7F7FFFFF, 20000, dtype=np.uint32),
            np.array(
                [
                    1,
                    0x7FFFFF,
                    0x800000,
                    0x3F7FFFFF,
                    0x3F800000,
                    0x40000000,
                    0x7F7FFFFF,
                    0x2B800000,
                    0x2B7FFFFF,
                    0x2C000000,
                ],
                np.uint32,
            ),
        ]
    )
    expected = prob_mass(bits.view(np.float32))
    got = np.array([m.mass_of_bits(int(b)) for b in bits], dtype=np.int64)
    assert np.array_equal(got, expected)


# ---- top_p_candidates ----------------------------------------------------------------------


@pytest.mark.parametrize("vocab", [1, 7, 100, 32000])
@pytest.mark.parametrize("k", [1, 5, 64, 1024])
def test_candidates_match_reference(vocab, k):
    k = min(k, vocab)
    rng = np.random.default_rng(vocab * 7919 + k)
    rows = 2 * len(KINDS) if vocab < 32000 else len(KINDS)
    probs = make_probs(rng, vocab, rows)
    batch = 4
    top_p = np.array(TOP_PS, np.float32)
    batch_id = rng.integers(0, batch, rows).astype(np.int32)
    batch_id[rng.random(rows) < 0.15] = -1  # padding rows
    batch_id[-1] = batch  # out of range: padding too
    expected = ref.top_p_candidates(probs, top_p, batch_id, max_candidate_len=k)
    for threads in (1, 0):  # inline, and the pool
        assert_candidates_equal(run_candidates(probs, top_p, batch_id, k, threads), expected)


@pytest.mark.parametrize("k", [1, 5, 64, 1024])
def test_candidates_large_vocab(k):
    rng = np.random.default_rng(k)
    vocab = 151936
    probs = make_probs(rng, vocab, 4, kinds=("peaked", "uniform", "ties", "special"))
    top_p = np.array([0.95, 0.5, 1.0, 1e-6], np.float32)
    batch_id = np.arange(4, dtype=np.int32)
    expected = ref.top_p_candidates(probs, top_p, batch_id, max_candidate_len=k)
    assert_candidates_equal(run_candidates(probs, top_p, batch_id, k), expected)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("vocab", [7, 5000])
def test_candidates_half_dtypes(dtype, vocab):
    rng = np.random.default_rng(11 + vocab)
    probs = make_probs(rng, vocab, 2 * len(KINDS))
    half = probs.astype(np.float16) if dtype == "float16" else to_bf16_bits(probs)
    top_p = np.array(TOP_PS + TOP_P_ODD, np.float32)
    batch_id = (np.arange(len(half)) % len(top_p)).astype(np.int32)
    for k in (1, 5, min(vocab, 64)):
        expected = ref.top_p_candidates(half, top_p, batch_id, max_candidate_len=k)
        assert_candidates_equal(run_candidates(half, top_p, batch_id, k), expected)


def test_candidates_odd_top_p_and_rules():
    # NaN / > 1 read as 1, <= 0 gives the first candidate only; ties by id ascending.
    probs = np.array([[0.25, 0.25, 0.0, 0.25, 0.25], [0.1, 0.2, 0.3, 0.4, np.nan]], np.float32)
    top_p = np.array([np.nan, 2.0, -1.0, 0.0, 0.5], np.float32)
    for b in range(len(top_p)):
        batch_id = np.array([b, b], np.int32)
        got = run_candidates(probs, top_p, batch_id, 4)
        assert_candidates_equal(got, ref.top_p_candidates(probs, top_p, batch_id, max_candidate_len=4))
    ids, scores, lens = run_candidates(probs, top_p, np.array([0, 4], np.int32), 4)
    assert ids[0].tolist() == [0, 1, 3, 4] and lens[0] == 4
    assert ids[1].tolist() == [3, 2, -1, -1] and lens[1] == 2 and scores[1, 2] == 0


def test_candidates_no_valid_entry_and_padding_are_empty():
    probs = np.array([[np.nan, -1, 0, np.inf], [0.5, 0.5, 0, 0], [0.5, 0.5, 0, 0]], np.float32)
    ids, scores, lens = run_candidates(probs, np.array([1.0], np.float32), np.array([0, -1, 1], np.int32), 3)
    assert lens.tolist() == [0, 0, 0]
    assert (ids == -1).all() and (scores == 0).all()


# ---- sample_tokens ---------------------------------------------------------------------------


@pytest.mark.parametrize("vocab", [1, 7, 100, 32000])
def test_sample_matches_reference(vocab):
    rows_per_request = [1, 3, 2, 1, 4, 1, 2, 5] if vocab < 32000 else [1, 2, 1, 3, 2]
    args = sample_case(np.random.default_rng(vocab), vocab, rows_per_request)
    expected = ref.sample_tokens(*args)
    for threads in (1, 0):
        got = run_sample(*args, threads)
        assert np.array_equal(got, expected), np.argwhere(got != expected).tolist()


def test_sample_large_vocab():
    args = large_vocab_case(np.random.default_rng(5))
    assert np.array_equal(run_sample(*args), ref.sample_tokens(*args))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_sample_half_dtypes(dtype):
    rng = np.random.default_rng(3)
    vocab = 3000
    cu, batch_id = make_batch(rng, [2] * 9, padding_rows=2)
    probs = make_probs(rng, vocab, len(batch_id))
    half = probs.astype(np.float16) if dtype == "float16" else to_bf16_bits(probs)
    top_p, top_k, seed, step_idx = request_params(rng, 9, vocab)
    expected = ref.sample_tokens(half, top_p, top_k, seed, step_idx, batch_id, cu)
    assert np.array_equal(run_sample(half, top_p, top_k, seed, step_idx, batch_id, cu), expected)


def test_sample_padding_and_invalid_rows_give_minus_one():
    probs = np.array([[np.nan, 0, -1], [0.2, 0.3, 0.5], [0.2, 0.3, 0.5]], np.float32)
    one = np.ones(2)
    tokens = run_sample(
        probs,
        (one * 0.9).astype(np.float32),
        np.zeros(2, np.int32),
        np.zeros(2, np.int64),
        np.zeros(2, np.int64),
        np.array([0, -1, 2], np.int32),
        np.array([0, 1, 1], np.int32),
    )
    assert tokens.tolist() == [-1, -1, -1]


def test_top_k_one_and_tiny_top_p_are_argmax():
    rng = np.random.default_rng(9)
    vocab, rows = 500, 64
    probs = make_probs(rng, vocab, rows, kinds=("peaked", "uniform", "ties", "zeros", "special", "large"))
    cu, batch_id = make_batch(rng, [1] * rows)
    seed = rng.integers(0, 2**62, rows)
    step = rng.integers(0, 1000, rows)
    expected = []
    for row in probs:
        valid = np.isfinite(row) & (row > 0)
        best = np.where(valid, row, -np.inf).max()
        expected.append(int(np.flatnonzero(valid & (row == best))[0]))  # smallest id on ties
    for top_p, top_k in ((1.0, 1), (1e-9, 0), (0.0, 0), (0.95, 1)):
        got = run_sample(
            probs, np.full(rows, top_p, np.float32), np.full(rows, top_k, np.int32), seed, step, batch_id, cu
        )
        assert got.tolist() == expected


def chi_square_critical(dof: int, z: float = 4.2649) -> float:
    """Upper quantile of chi-square (Wilson-Hilferty); z = 4.2649 is significance 1e-5."""
    a = 2.0 / (9.0 * dof)
    return dof * (1.0 - a + z * np.sqrt(a)) ** 3


@pytest.mark.parametrize("top_p,top_k", [(1.0, 0), (0.9, 0), (0.7, 0), (1.0, 6), (0.8, 10)])
def test_sampling_frequencies_match_target(top_p, top_k):
    """Chi-square goodness of fit over many seeds (fixed seeds: deterministic, cannot flake)."""
    rng = np.random.default_rng(2024)
    vocab = 24
    row = softmax(rng.normal(0.0, 1.0, vocab))
    row[3] = row[5]  # an exact tie
    target = ref.sampling_distribution(row, top_p, top_k)
    draws = 40000
    # one request per draw, each with its own seed; and one request walking many positions
    probs = np.repeat(row[None], draws, axis=0)
    cu, batch_id = make_batch(rng, [1] * draws)
    tokens_seeds = run_sample(
        probs,
        np.full(draws, top_p, np.float32),
        np.full(draws, top_k, np.int32),
        np.arange(draws, dtype=np.int64) * 7919 + 1,
        np.zeros(draws, np.int64),
        batch_id,
        cu,
    )
    cu1 = np.array([0, draws], np.int32)
    tokens_positions = run_sample(
        probs,
        np.array([top_p], np.float32),
        np.array([top_k], np.int32),
        np.array([42], np.int64),
        np.array([0], np.int64),
        np.zeros(draws, np.int32),
        cu1,
    )
    for tokens in (tokens_seeds, tokens_positions):
        counts = np.bincount(tokens, minlength=vocab)
        assert counts[target == 0].sum() == 0, "drew a token outside top-k / top-p"
        support = target > 0
        expected = target[support] * draws
        stat = float(((counts[support] - expected) ** 2 / expected).sum())
        dof = int(support.sum()) - 1
        if dof > 0:
            assert stat < chi_square_critical(dof), (stat, dof)


def test_batch_invariance():
    """A request's tokens do not depend on the other requests or on its slot."""
    rng = np.random.default_rng(17)
    vocab = 2000
    mine = make_probs(rng, vocab, 3, kinds=("peaked", "uniform", "ties"))
    params = dict(top_p=0.9, top_k=50, seed=123456789, step=77)

    def alone():
        cu = np.array([0, 3], np.int32)
        return run_sample(
            mine,
            np.array([params["top_p"]], np.float32),
            np.array([params["top_k"]], np.int32),
            np.array([params["seed"]], np.int64),
            np.array([params["step"]], np.int64),
            np.zeros(3, np.int32),
            cu,
        )

    base = alone()
    for slot, others in ((0, 4), (2, 4), (5, 5), (3, 7)):
        batch = others + 1
        rows_per = [int(x) for x in rng.integers(1, 4, batch)]
        rows_per[slot] = 3
        cu, batch_id = make_batch(rng, rows_per, padding_rows=2)
        probs = make_probs(rng, vocab, len(batch_id))
        probs[cu[slot] : cu[slot] + 3] = mine
        top_p, top_k, seed, step = request_params(rng, batch, vocab)
        top_p[slot], top_k[slot], seed[slot], step[slot] = (
            params["top_p"],
            params["top_k"],
            params["seed"],
            params["step"],
        )
        got = run_sample(probs, top_p, top_k, seed, step, batch_id, cu)
        assert np.array_equal(got[cu[slot] : cu[slot] + 3], base)


def test_different_seeds_give_different_streams():
    rng = np.random.default_rng(23)
    vocab, rows = 1000, 64
    row = make_row(rng, "uniform", vocab)
    probs = np.repeat(row[None], rows, axis=0)
    cu = np.array([0, rows], np.int32)
    bid = np.zeros(rows, np.int32)

    def draw(seed: int, step: int) -> np.ndarray:  # one request over every row, top_p 1, no top_k
        return run_sample(
            probs,
            np.array([1.0], np.float32),
            np.array([0], np.int32),
            np.array([seed], np.int64),
            np.array([step], np.int64),
            bid,
            cu,
        )

    draws = [draw(s, 0) for s in (1, 2, 2**32 + 1, -1)]
    for i in range(len(draws)):
        for j in range(i + 1, len(draws)):
            assert (draws[i] != draws[j]).sum() > rows // 2
    # same seed, same positions: same tokens; positions shifted by step_idx: the stream shifts
    again = draw(1, 0)
    assert np.array_equal(again, draws[0])
    shifted = draw(1, 1)
    assert np.array_equal(shifted[:-1], draws[0][1:])


_THREADS_SCRIPT = r"""
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from fastspec import reference as ref
from tests.helpers.sampling_cases import make_batch, make_probs, request_params
from tests.ops.test_sampling_kernels import run_candidates, run_sample
rng = np.random.default_rng(77)
cu, bid = make_batch(rng, [3, 1, 4, 2, 1, 1, 5, 2], padding_rows=2)
probs = make_probs(rng, 3000, len(bid))
top_p, top_k, seed, step = request_params(rng, 8, 3000)
assert np.array_equal(run_sample(probs, top_p, top_k, seed, step, bid, cu),
                      ref.sample_tokens(probs, top_p, top_k, seed, step, bid, cu))
got = run_candidates(probs, top_p, bid, 64)
exp = ref.top_p_candidates(probs, top_p, bid, max_candidate_len=64)
assert all(np.array_equal(g, e) for g, e in zip(got, exp))
print("ok")
"""


@pytest.mark.parametrize("threads", [1, 3, 7])
def test_any_pool_size_gives_the_same_bits(threads):
    """The pool size is read once per process (FASTSPEC_NUM_THREADS): check several in subprocesses."""
    import os
    import subprocess
    import sys

    root = str(ROOT)
    env = dict(os.environ, FASTSPEC_NUM_THREADS=str(threads))
    result = subprocess.run(
        [sys.executable, "-c", _THREADS_SCRIPT, root], env=env, cwd=root, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr[-2000:]


@pytest.mark.parametrize("top_k", [300, 9000, 20000])
def test_sample_large_top_k(top_k):
    """top_k above the chunk-bound limit (8192) takes the histogram path; below it the fast path."""
    rng = np.random.default_rng(top_k)
    vocab = 32000
    cu, batch_id = make_batch(rng, [2, 2, 2, 2], padding_rows=0)
    probs = make_probs(rng, vocab, len(batch_id), kinds=("peaked", "uniform", "ties", "zeros"))
    top_p = np.array([1.0, 0.9, 0.5, 1e-6], np.float32)
    top_k = np.full(4, top_k, np.int32)
    seed = np.arange(4, dtype=np.int64) + 11
    step = np.arange(4, dtype=np.int64) * 1000
    expected = ref.sample_tokens(probs, top_p, top_k, seed, step, batch_id, cu)
    assert np.array_equal(run_sample(probs, top_p, top_k, seed, step, batch_id, cu), expected)


def test_every_fp16_pattern_in_one_row():
    """Every binary16 bit pattern (subnormals, inf, NaN, negatives) in one row, in shuffled orders:
    the vectorised fp16 widening must order and validate exactly like the reference."""
    rng = np.random.default_rng(16)
    patterns = np.arange(1 << 16, dtype=np.uint16)
    rows = np.stack([rng.permutation(patterns) for _ in range(3)] + [patterns]).view(np.float16)
    top_p = np.array([1.0, 0.5, 1e-6, 0.99], np.float32)
    batch_id = np.arange(4, dtype=np.int32)
    expected = ref.top_p_candidates(rows, top_p, batch_id, max_candidate_len=1024)
    assert_candidates_equal(run_candidates(rows, top_p, batch_id, 1024), expected)
    # a row of subnormals only, with ties
    sub = rng.integers(1, 1024, 3000).astype(np.uint16).view(np.float16)[None]
    got = run_candidates(sub, top_p[:1], np.zeros(1, np.int32), 100)
    assert_candidates_equal(got, ref.top_p_candidates(sub, top_p[:1], np.zeros(1, np.int32), max_candidate_len=100))
    one_request = (
        rows,
        top_p[:1],
        np.array([0], np.int32),
        np.array([5], np.int64),
        np.array([0], np.int64),
        np.zeros(4, np.int32),
        np.array([0, 4], np.int32),
    )
    assert np.array_equal(run_sample(*one_request), ref.sample_tokens(*one_request))


def near_uniform_rows(rng, vocab: int, rows: int, shape: str) -> np.ndarray:
    """Rows whose top-p set is most of the row: the CPU kernel's fitted-histogram path."""
    if shape == "flat":
        return np.stack([softmax(rng.normal(0, 1e-3, vocab)) for _ in range(rows)])
    if shape == "holes":  # zeros, NaN and one spike among near-equal values
        probs = np.stack([softmax(rng.normal(0, 1e-3, vocab)) for _ in range(rows)])
        probs[rng.random(probs.shape) < 0.1] = 0
        probs[rng.random(probs.shape) < 0.01] = np.nan
        probs[:, rng.integers(0, vocab)] = 0.3
        return probs
    if shape == "unrepresentative":  # the groups the kernel samples differ from the rest: forces its fallback
        probs = np.stack([softmax(rng.normal(0, 1e-3, vocab)) for _ in range(rows)])
        probs[:, (np.arange(vocab) // 64) % 16 == 0] *= np.float32(0.98)
        return probs
    if shape == "softmax":  # N(0, 1) logits: the gather above tau skipped, the window's floor summed in lanes
        return np.stack([softmax(rng.normal(0, 1, vocab)) for _ in range(rows)])
    if shape in ("softmax_high_sample", "softmax_low_sample"):  # the sample misleads: the cut below / above the window
        probs = np.stack([softmax(rng.normal(0, 1, vocab)) for _ in range(rows)])
        probs[:, (np.arange(vocab) // 64) % 16 == 0] *= np.float32(1.5 if shape == "softmax_high_sample" else 0.6)
        return probs
    if shape == "exponent_boundary":
        return (rng.uniform(0.9, 1.1, (rows, vocab)) * 2.0**-17).astype(np.float32)
    if shape == "trend":  # probability correlated with the token id
        return np.stack([softmax(np.linspace(0, 1e-2, vocab) + rng.normal(0, 1e-4, vocab)) for _ in range(rows)])
    raise ValueError(shape)


SOFTMAX_SHAPES = ["softmax", "softmax_high_sample", "softmax_low_sample"]


@pytest.mark.parametrize("shape", ["flat", "holes", "unrepresentative", "exponent_boundary", "trend", *SOFTMAX_SHAPES])
@pytest.mark.parametrize("vocab", [4097, 50001, 151937])
def test_sample_near_uniform_rows(shape, vocab):
    args = near_uniform_case(np.random.default_rng(vocab + len(shape)), vocab, shape)
    expected = ref.sample_tokens(*args)
    for threads in (1, 0):
        np.testing.assert_array_equal(run_sample(*args, num_threads=threads), expected)


def near_uniform_case(rng, vocab: int, shape: str) -> tuple:
    """sample_tokens' inputs for three near-uniform rows of ``shape``, one request each."""
    rows = 3
    probs = near_uniform_rows(rng, vocab, rows, shape).astype(np.float32)
    top_p = np.array([0.9, 0.99, 0.5], np.float32)
    top_k = np.array([0, 0, 9000], np.int32)
    seed = rng.integers(-(2**62), 2**62, rows)
    step = rng.integers(0, 1000, rows)
    return probs, top_p, top_k, seed, step, np.arange(rows, dtype=np.int32), np.arange(rows + 1, dtype=np.int32)


# ---- the random stream: TARGET (default) or DRAFT ----------------------------------------------


def run_sample_stream(probs, top_p, top_k, seed, step_idx, batch_id, cu, rand_stream, num_threads=0):
    tokens = np.full(probs.shape[0], 12345, np.int64)
    arrays.sample_tokens(
        np.ascontiguousarray(probs),
        top_p,
        top_k,
        seed,
        step_idx,
        batch_id,
        cu,
        tokens=tokens,
        num_threads=num_threads,
        rand_stream=rand_stream,
    )
    return tokens


@pytest.mark.parametrize("vocab", [7, 100, 32000])
def test_draft_stream_matches_reference(vocab):
    rows_per_request = [1, 3, 2, 1, 4, 1, 2, 5] if vocab < 32000 else [1, 2, 1, 3, 2]
    args = sample_case(np.random.default_rng(vocab + 505), vocab, rows_per_request)
    expected = ref.sample_tokens(*args, stream=ref.STREAM_DRAFT)
    for threads in (1, 0):
        got = run_sample_stream(*args, ref.STREAM_DRAFT, threads)
        assert np.array_equal(got, expected), np.argwhere(got != expected).tolist()
    # the default is TARGET, bit for bit
    target = ref.sample_tokens(*args)
    assert np.array_equal(run_sample_stream(*args, ref.STREAM_TARGET), target)
    assert np.array_equal(run_sample(*args), target)


@pytest.mark.parametrize("shape", ["flat", "holes"])
def test_draft_stream_near_uniform_rows(shape):
    """The CPU kernel's near-flat path draws at its own call site: DRAFT must reach it too."""
    args = near_uniform_case(np.random.default_rng(len(shape) + 606), 50001, shape)
    expected = ref.sample_tokens(*args, stream=ref.STREAM_DRAFT)
    for threads in (1, 0):
        np.testing.assert_array_equal(run_sample_stream(*args, ref.STREAM_DRAFT, threads), expected)


def flat_many_seeds(rng, requests: int, rows_each: int, vocab: int):
    """Near-uniform rows, one distinct seed per request: draws on two streams should rarely agree."""
    cu = np.arange(0, requests * rows_each + 1, rows_each, dtype=np.int32)
    batch_id = np.repeat(np.arange(requests, dtype=np.int32), rows_each)
    probs = np.stack([softmax(rng.normal(0, 0.05, vocab)) for _ in range(len(batch_id))]).astype(np.float32)
    top_p = np.ones(requests, np.float32)
    top_k = np.zeros(requests, np.int32)
    seed = rng.integers(-(2**63), 2**63 - 1, requests, dtype=np.int64)
    step = rng.integers(0, 2**20, requests, dtype=np.int64)
    return probs, top_p, top_k, seed, step, batch_id, cu


def test_draft_stream_differs_from_target():
    rng = np.random.default_rng(707)
    case = flat_many_seeds(rng, requests=64, rows_each=4, vocab=1000)
    target = run_sample_stream(*case, ref.STREAM_TARGET)
    draft = run_sample_stream(*case, ref.STREAM_DRAFT)
    assert np.array_equal(target, ref.sample_tokens(*case))
    assert np.array_equal(draft, ref.sample_tokens(*case, stream=ref.STREAM_DRAFT))
    assert (target >= 0).all() and (draft >= 0).all()
    assert (target != draft).mean() > 0.9  # ~1/1000 agree by chance


@pytest.mark.parametrize("bad", [0, 2, 3, 4, 6, -1, 2**32 + 1, True, 5.0, "draft", None])
def test_bad_stream_raises_value_error(bad):
    rng = np.random.default_rng(808)
    case = flat_many_seeds(rng, requests=2, rows_each=2, vocab=50)
    with pytest.raises(ValueError, match="stream"):
        run_sample_stream(*case, bad)
    with pytest.raises(ValueError, match="stream"):
        ref.sample_tokens(*case, stream=bad)


# ---- the whole row (top_p 1, top_k not limiting) and decode batch sizes ------------------------


@pytest.mark.parametrize("vocab", [1598, 32000])
@pytest.mark.parametrize("rows", [1, 4, 24])
def test_whole_row_sets_and_small_batches_equal_the_reference(vocab, rows):
    """S is every entry with mass when top_p is 1 and top_k does not limit: the kernels skip the select
    there; draws and kept probabilities stay the reference's bits, for every kind of row and thread count."""
    rng = np.random.default_rng(vocab + rows)
    probs = make_probs(rng, vocab, rows)
    cu, batch_id = make_batch(rng, [1] * rows, padding_rows=0)
    top_p = np.where(rng.random(rows) < 0.7, 1.0, 0.9).astype(np.float32)
    top_k = rng.choice(np.array([0, vocab, vocab + 5, 3], np.int32), rows)
    seed = rng.integers(1, 1 << 40, rows).astype(np.int64)
    step_idx = rng.integers(0, 100, rows).astype(np.int64)
    want = ref.sample_tokens(probs, top_p, top_k, seed, step_idx, batch_id, cu)
    want_probs = ref.top_k_top_p_probs(probs, top_p, top_k, batch_id)
    for threads in (1, 2, 0):
        np.testing.assert_array_equal(run_sample(probs, top_p, top_k, seed, step_idx, batch_id, cu, threads), want)
        out = np.full(probs.shape, 7.0, np.float32)
        arrays.top_k_top_p_probs(
            np.ascontiguousarray(probs), top_p, top_k, batch_id, target_probs=out, num_threads=threads
        )
        assert np.array_equal(out.view(np.uint32), want_probs.view(np.uint32))

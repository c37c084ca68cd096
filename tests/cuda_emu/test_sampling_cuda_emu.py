"""top_p_candidates, sample_tokens and top_k_top_p_probs on the emulated CUDA device: bit-exact
against the reference for every row kind, dtype and vocabulary size the CPU tests use, in every
block order, with rows of 151936 entries and launches of many blocks. The helpers (arrays filled
with garbage that the kernels must overwrite) are the XPU emulator tests'."""

from __future__ import annotations

import numpy as np
import pytest

from fastspec import arrays as kernels
from fastspec import reference as ref
from tests.helpers.sampling_cases import KINDS, TOP_P_ODD, TOP_PS, make_batch, make_probs, probs_case, request_params
from tests.cuda_emu.launches import LAUNCHES, describe, launch
from tests.xpu.test_sampling_xpu import assert_candidates_equal, check_the_spec_example, in_dtype
from tests.xpu.test_sampling_xpu import xpu_candidates as candidates
from tests.xpu.test_sampling_xpu import xpu_sample as sample
from tests.xpu.test_top_k_top_p_probs_xpu import assert_bits
from tests.xpu.test_top_k_top_p_probs_xpu import xpu_probs as renormalised

DTYPES = ["float32", "float16", "bfloat16"]


@pytest.mark.parametrize("options", LAUNCHES, ids=describe)
def test_spec_example(options):
    check_the_spec_example(options)  # options name the emulated CUDA device and its block order


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("vocab", [1, 7, 300, 4096])
@pytest.mark.parametrize("k", [1, 64, 1024])
def test_candidates_match_the_reference(dtype, vocab, k):
    k = min(k, vocab)
    rng = np.random.default_rng(vocab * 31 + k)
    rows = 2 * len(KINDS)
    probs = in_dtype(make_probs(rng, vocab, rows), dtype)
    top_p = np.array(TOP_PS + TOP_P_ODD, np.float32)
    batch_id = rng.integers(-1, len(top_p) + 1, rows).astype(np.int32)
    options = launch(vocab + k + len(dtype))
    expected = ref.top_p_candidates(probs, top_p, batch_id, max_candidate_len=k)
    assert_candidates_equal(candidates(probs, top_p, batch_id, k, options), expected, describe(options))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("vocab", [1, 7, 300, 4096])
def test_sample_matches_the_reference(dtype, vocab):
    rng = np.random.default_rng(vocab + 3)
    rows_per_request = [1, 3, 2, 1, 4, 1, 2, 5]
    cu, batch_id = make_batch(rng, rows_per_request, padding_rows=3)
    probs = in_dtype(make_probs(rng, vocab, len(batch_id)), dtype)
    top_p, top_k, seed, step = request_params(rng, len(rows_per_request), vocab)
    args = (top_p, top_k, seed, step, batch_id, cu)
    for n, stream in enumerate((ref.STREAM_TARGET, ref.STREAM_DRAFT)):
        options = launch(vocab + n + len(dtype))
        assert np.array_equal(sample(probs, args, options, stream), ref.sample_tokens(probs, *args, stream=stream)), (
            describe(options))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("vocab", [1, 7, 300, 4096])
def test_top_k_top_p_probs_matches_the_reference(dtype, vocab):
    probs, top_p, top_k, batch_id = probs_case(np.random.default_rng(vocab + 13), vocab)
    probs = in_dtype(probs, dtype)
    options = launch(vocab + len(dtype))
    assert_bits(renormalised(probs, top_p, top_k, batch_id, options),
                ref.top_k_top_p_probs(probs, top_p, top_k, batch_id), describe(options))


def test_large_vocabulary_matches_the_reference():
    """Rows of 151936 entries: every thread of a block strides over hundreds of entries per pass."""
    rng = np.random.default_rng(5)
    cu, batch_id = make_batch(rng, [1, 1], padding_rows=1)
    probs = make_probs(rng, 151936, len(batch_id), kinds=("peaked", "ties", "zeros"))
    top_p, top_k = np.array([0.9, 0.5], np.float32), np.array([0, 50], np.int32)
    args = (top_p, top_k, np.array([1, 2], np.int64), np.array([10, 0], np.int64), batch_id, cu)
    assert np.array_equal(sample(probs, args, launch(1)), ref.sample_tokens(probs, *args))
    assert_candidates_equal(candidates(probs, top_p, batch_id, 64, launch(2)),
                            ref.top_p_candidates(probs, top_p, batch_id, max_candidate_len=64))
    assert_bits(renormalised(probs, top_p, top_k, batch_id, launch(3)),
                ref.top_k_top_p_probs(probs, top_p, top_k, batch_id))


def test_many_blocks_equal_the_cpu_kernel():
    """Many rows, one block each, in a shuffled order: the emulated CUDA kernels against the CPU
    kernels (tested against the reference)."""
    rng = np.random.default_rng(99)
    vocab = 512
    cu, batch_id = make_batch(rng, [int(x) for x in rng.integers(1, 5, 40)], padding_rows=5)
    probs = make_probs(rng, vocab, len(batch_id))
    args = (*request_params(rng, 40, vocab), batch_id, cu)
    options = LAUNCHES[2]
    assert np.array_equal(sample(probs, args, options), sample(probs, args, {}))
    assert_candidates_equal(candidates(probs, args[0], batch_id, 100, options),
                            candidates(probs, args[0], batch_id, 100, {}))
    assert_bits(renormalised(probs, args[0], args[1], batch_id, options),
                renormalised(probs, args[0], args[1], batch_id, {}))


def test_bad_input_gets_the_cpu_backends_error():
    probs = np.full((2, 8), 0.125, np.float64)  # float64: not a probability dtype
    top_p = np.array([0.5], np.float32)
    batch_id = np.zeros(2, np.int32)
    messages = []
    for options in ({}, LAUNCHES[0]):
        with pytest.raises(ValueError) as error:
            kernels.top_p_candidates(probs, top_p, batch_id, max_candidate_len=2, **options)
        messages.append(str(error.value))
    assert messages[0] == messages[1] and "probs" in messages[0]


def test_non_numpy_arrays_and_unknown_orders_are_refused():
    probs = np.full((1, 4), 0.25, np.float32)
    top_p, batch_id = np.array([0.5], np.float32), np.zeros(1, np.int32)
    with pytest.raises(ValueError, match="cuda_block_order"):
        kernels.top_p_candidates(probs, top_p, batch_id, max_candidate_len=2, backend="cuda_emulator",
                                 cuda_block_order="backwards")
    with pytest.raises(ValueError, match="backend"):
        kernels.top_p_candidates(probs, top_p, batch_id, max_candidate_len=2, backend="cuda")

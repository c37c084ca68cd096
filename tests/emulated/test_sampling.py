"""top_p_candidates, sample_tokens and top_k_top_p_probs on the emulated XPU and the emulated CUDA
device: bit-exact against the reference for every row kind, dtype and vocabulary size the CPU tests
use, in every launch, with rows of 151936 entries and rows spread over many workers."""

from __future__ import annotations

import numpy as np
import pytest

from fastspec import arrays
from fastspec import reference as ref
from tests.helpers.devices import DEVICES, EVERY_LAUNCH, launch_id
from tests.helpers.emulated_calls import (
    assert_bits,
    assert_candidates_equal,
    candidates,
    in_dtype,
    renormalised,
    sample,
)
from tests.helpers.sampling_cases import (
    KINDS,
    TOP_P_ODD,
    TOP_PS,
    large_vocab_case,
    make_probs,
    min_p_values,
    probs_case,
    sample_case,
)

DTYPES = ["float32", "float16", "bfloat16"]
VOCABS = [1, 7, 300, 4096]
devices = pytest.mark.parametrize("device", DEVICES, ids=str)


@pytest.mark.parametrize("device, options", EVERY_LAUNCH, ids=launch_id)
def test_spec_examples(device, options):
    probs = np.array([[0.1, 0.5, 0.2, 0.2, 0.0], [np.nan, 0, 0, 0, 0], [0.25, 0.25, 0.25, 0.25, 0.0]], np.float32)
    top_p = np.array([0.6, 0.5], np.float32)
    batch_id = np.array([0, 1, 1], np.int32)
    got = candidates(probs, top_p, batch_id, 3, options)
    assert got[0][0].tolist() == [1, 2, -1] and got[2].tolist() == [2, 0, 2]
    assert_candidates_equal(got, ref.top_p_candidates(probs, top_p, batch_id, max_candidate_len=3))
    args = (
        top_p,
        np.array([0, 2], np.int32),
        np.array([1, 2], np.int64),
        np.array([0, 5], np.int64),
        batch_id,
        np.array([0, 1, 3], np.int32),
    )
    assert np.array_equal(sample(probs, args, options), ref.sample_tokens(probs, *args))

    probs = np.array(
        [
            [0.125, 0.375, 0.125, 0.125, 0.125, 0.125],
            [np.nan, 0, 0, 0, 0, 0],
            [0.125, 0.375, 0.125, 0.125, 0.125, 0.125],
        ],
        np.float32,
    )
    top_p, top_k = np.array([1.0, 0.3], np.float32), np.array([2, 0], np.int32)
    batch_id = np.array([0, 1, -1], np.int32)
    got = renormalised(probs, top_p, top_k, batch_id, options)
    assert got[0].tolist() == [0.25, 0.75, 0.0, 0.0, 0.0, 0.0] and (got[1:] == 0).all()
    assert_bits(got, ref.top_k_top_p_probs(probs, top_p, top_k, batch_id))


@devices
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("vocab", VOCABS)
@pytest.mark.parametrize("k", [1, 5, 64, 1024])
def test_candidates_match_the_reference(device, dtype, vocab, k):
    k = min(k, vocab)
    rng = np.random.default_rng(vocab * 31 + k)
    rows = 2 * len(KINDS)
    probs = in_dtype(make_probs(rng, vocab, rows), dtype)
    top_p = np.array(TOP_PS + TOP_P_ODD, np.float32)
    batch_id = rng.integers(-1, len(top_p) + 1, rows).astype(np.int32)
    options = device.launch(vocab + k + len(dtype))
    expected = ref.top_p_candidates(probs, top_p, batch_id, max_candidate_len=k)
    assert_candidates_equal(candidates(probs, top_p, batch_id, k, options), expected, device.describe(options))


@devices
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("vocab", VOCABS)
def test_sample_matches_the_reference(device, dtype, vocab):
    probs, *args = sample_case(np.random.default_rng(vocab + 3), vocab)
    probs = in_dtype(probs, dtype)
    for n, stream in enumerate((ref.STREAM_TARGET, ref.STREAM_DRAFT)):
        options = device.launch(vocab + n + len(dtype))
        assert np.array_equal(sample(probs, args, options, stream), ref.sample_tokens(probs, *args, stream=stream)), (
            device.describe(options)
        )


@devices
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("vocab", VOCABS)
def test_top_k_top_p_probs_matches_the_reference(device, dtype, vocab):
    probs, top_p, top_k, batch_id = probs_case(np.random.default_rng(vocab + 13), vocab)
    probs = in_dtype(probs, dtype)
    options = device.launch(vocab + len(dtype))
    assert_bits(
        renormalised(probs, top_p, top_k, batch_id, options),
        ref.top_k_top_p_probs(probs, top_p, top_k, batch_id),
        device.describe(options),
    )


@devices
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("vocab", VOCABS)
def test_min_p_matches_the_reference(device, dtype, vocab):
    """The three ops with min_p per request (edge values included): its floor, then top-k and top-p."""
    rng = np.random.default_rng(vocab + 29)
    probs, *args = sample_case(rng, vocab)
    probs = in_dtype(probs, dtype)
    top_p, top_k, _, _, batch_id, _ = args
    min_p = min_p_values(rng, len(top_p))
    k = min(64, vocab)
    context = device.describe(device.launch(vocab))
    assert_candidates_equal(
        candidates(probs, top_p, batch_id, k, device.launch(vocab), min_p),
        ref.top_p_candidates(probs, top_p, batch_id, min_p, max_candidate_len=k),
        context,
    )
    got = sample(probs, args, device.launch(vocab + 1), min_p=min_p)
    assert np.array_equal(got, ref.sample_tokens(probs, *args, min_p)), device.describe(device.launch(vocab + 1))
    assert_bits(
        renormalised(probs, top_p, top_k, batch_id, device.launch(vocab + 2), min_p),
        ref.top_k_top_p_probs(probs, top_p, top_k, batch_id, min_p),
        device.describe(device.launch(vocab + 2)),
    )


@devices
@pytest.mark.slow
def test_large_vocabulary_matches_the_reference(device):
    """Rows of 151936 entries: every worker strides over hundreds of entries per pass."""
    probs, *args = large_vocab_case(np.random.default_rng(5), *device.large_vocab_rows)
    top_p, top_k, _, _, batch_id, _ = args
    assert np.array_equal(sample(probs, args, device.launch(1)), ref.sample_tokens(probs, *args))
    assert_candidates_equal(
        candidates(probs, top_p, batch_id, 64, device.launch(2)),
        ref.top_p_candidates(probs, top_p, batch_id, max_candidate_len=64),
    )
    assert_bits(
        renormalised(probs, top_p, top_k, batch_id, device.launch(3)),
        ref.top_k_top_p_probs(probs, top_p, top_k, batch_id),
    )


@devices
@pytest.mark.slow
def test_many_rows_equal_the_cpu_kernels(device):
    """Rows spread over many clusters or blocks: the emulated kernels against the CPU kernels
    (which the CPU tests hold to the reference)."""
    rng = np.random.default_rng(99)
    probs, *args = sample_case(rng, 1024, [int(x) for x in rng.integers(1, 5, 40)], padding_rows=5)
    top_p, top_k, _, _, batch_id, _ = args
    for options in (device.launches[n] for n in device.wide):
        context = device.describe(options)
        assert np.array_equal(sample(probs, args, options), sample(probs, args, {})), context
        assert_candidates_equal(
            candidates(probs, top_p, batch_id, 100, options), candidates(probs, top_p, batch_id, 100, {}), context
        )
        assert_bits(
            renormalised(probs, top_p, top_k, batch_id, options),
            renormalised(probs, top_p, top_k, batch_id, {}),
            context,
        )


@devices
def test_bad_input_gets_the_cpu_backends_error(device):
    probs = np.full((2, 8), 0.125, np.float64)  # float64: not a probability dtype
    top_p = np.array([0.5], np.float32)
    batch_id = np.zeros(2, np.int32)
    messages = []
    for options in ({}, device.launches[0]):
        with pytest.raises(ValueError) as error:
            arrays.top_p_candidates(probs, top_p, batch_id, max_candidate_len=2, **options)
        messages.append(str(error.value))
    assert messages[0] == messages[1] and "probs" in messages[0]

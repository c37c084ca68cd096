"""temperature_softmax: the CPU kernel (pointer API) at every SIMD level and the Paddle op against the numpy
reference, bit for bit, on random and edge calls; the op's exp and its probabilities against numpy's float64
exp and softmax; the rules by hand (padding rows, rows without probabilities, greedy temperatures)."""

from __future__ import annotations

import numpy as np
import paddle
import pytest

import fastspec.arrays
import fastspec.ops as ops
from fastspec.reference.softmax import softmax_exp
from tests.helpers import softmax_cases as cases
from tests.helpers.simd_levels import check_cases_at_level


def test_random_calls_match_the_reference():
    valid_rows = 0
    for i, (arrays, attrs) in enumerate(cases.cases(seed=11, count=300)):
        got = cases.run_arrays(arrays, attrs)
        cases.assert_bit_equal(got, cases.run_reference(arrays, attrs), f"case {i}")
        valid_rows += int((got.sum(axis=1) > 0).sum())
    assert valid_rows > 300  # most rows have probabilities (the cases are not all padding or NaN)


@pytest.mark.parametrize("rows, vocab", [(24, 32000), (3, 151936), (384, 300)])
def test_decode_sizes_and_the_pool(rows, vocab):
    """Real vocabularies; past 2^18 entries the rows go to the thread pool."""
    arrays, attrs = cases.case(np.random.default_rng(rows), rows=rows, vocab=vocab, batch=4)
    arrays["batch_id_per_token_output"] = (np.arange(rows) % 4).astype(np.int32)
    cases.assert_bit_equal(cases.run_arrays(arrays, attrs), cases.run_reference(arrays, attrs))


@pytest.mark.parametrize("simd", ["off", "avx2"])
def test_narrower_simd_levels_match_the_reference(simd):
    """The widest level runs above."""
    check_cases_at_level(
        simd, "softmax_cases", "cases.cases(seed=5, count=60) + cases.cases(seed=6, count=4, rows=5, vocab=32000)"
    )


def test_paddle_op_matches_the_reference():
    for i, (arrays, attrs) in enumerate(cases.cases(seed=12, count=40)):
        probs = ops.temperature_softmax(*(paddle.to_tensor(arrays[n]) for n in cases.NAMES))
        cases.assert_bit_equal(probs.numpy(), cases.run_reference(arrays, attrs), f"case {i}")


def test_exp_is_close_to_numpy_and_never_decreases():
    x = np.concatenate([-np.geomspace(1e-30, 64.0, 200001), np.linspace(-64.0, 0.0, 200001)]).astype(np.float32)
    x = np.unique(x)  # sorted
    got = softmax_exp(x)
    want = np.exp(x.astype(np.float64))
    ulp = np.abs(got - want) / np.spacing(want.astype(np.float32)).astype(np.float64)
    assert ulp.max() <= 2.0, f"exp off by {ulp.max():.2f} ulp at x = {x[ulp.argmax()]}"
    assert (np.diff(got) >= 0).all()  # monotone: a larger logit never gets a smaller probability
    assert softmax_exp(np.float32([0.0, -0.0]))[0] == 1.0 and (softmax_exp(np.float32([-64.01, -np.inf])) == 0).all()


def test_probabilities_are_close_to_a_float64_softmax():
    rng = np.random.default_rng(3)
    logits = (rng.normal(0.0, 3.0, (8, 32000))).astype(np.float32)
    temperature = np.array([1.0, 0.7, 1.3, 0.2], np.float32)
    ids = (np.arange(8) % 4).astype(np.int32)
    probs = fastspec.arrays.temperature_softmax(logits, temperature, ids)
    x = logits.astype(np.float64) / temperature[ids, None].astype(np.float64)
    want = np.exp(x - x.max(axis=1, keepdims=True))
    want /= want.sum(axis=1, keepdims=True)
    big = want > 1e-20
    assert np.abs(probs[big] - want[big]).max() / want[big].max() < 1e-5
    assert np.abs(probs[big] / want[big] - 1).max() < 5e-5  # a few float32 roundings of the logit's product
    assert np.abs(probs.sum(axis=1, dtype=np.float64) - 1).max() < 1e-5


def test_the_rules_by_hand():
    inf, nan = np.inf, np.nan
    logits = np.array(
        [
            [0.0, 0.0, 0.0, 0.0],  # uniform
            [1.0, 2.0, 3.0, 4.0],  # a padding row (-1)
            [1.0, nan, 3.0, 4.0],  # NaN: no probabilities
            [-inf, -inf, -inf, -inf],  # nothing finite
            [1.0, inf, 3.0, 4.0],  # +inf
            [-inf, 5.0, -inf, -inf],  # one finite entry: all of the mass
            [1.0, 2.0, 3.0, 4.0],  # greedy (temperature 0 reads as 1)
            [1.0, 2.0, 3.0, 4.0],  # temperature 1
            [0.0, -100.0, 0.0, 0.0],  # below e^-64 of the maximum: 0
        ],
        np.float32,
    )
    temperature = np.array([0.5, 0.0, 1.0], np.float32)
    ids = np.array([0, -1, 2, 2, 2, 2, 1, 2, 2], np.int32)
    p = fastspec.arrays.temperature_softmax(logits, temperature, ids)
    assert p[0].tolist() == [0.25] * 4
    assert not p[1:5].any()
    assert p[5].tolist() == [0.0, 1.0, 0.0, 0.0]
    assert p[6].tobytes() == p[7].tobytes() and p[6].argmax() == 3 and np.all(np.diff(p[6]) > 0)
    assert p[8][1] == 0 and p[8][0] == p[8][2] == p[8][3] > 0

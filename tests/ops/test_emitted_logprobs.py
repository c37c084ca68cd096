"""emitted_logprobs: the CPU kernel (pointer API) at every SIMD level and the Paddle op against the numpy reference, bit for bit,
on random and edge calls; the op's log against numpy's float64 log; its records against the float64
semantics of fastspec/reference/logprobs.py (token_logprobs); the rules by hand (ties at the listed width,
banned tokens, widths past V, rows without log-probabilities, greedy temperatures, tokens not emitted)."""

from __future__ import annotations

import numpy as np
import paddle
import pytest

import fastspec.ops as ops
from fastspec.reference.logprobs import token_logprobs
from fastspec.reference.softmax import softmax_log
from fastspec.runtime.logprobs import decode
from tests.helpers import logprobs_cases as cases
from tests.helpers.simd_levels import check_cases_at_level


def test_random_calls_match_the_reference():
    emitted = 0
    for i, (arrays, attrs) in enumerate(cases.cases(seed=11, count=200)):
        got = cases.run_arrays(arrays, attrs)
        cases.assert_bit_equal(got, cases.run_reference(arrays, attrs), f"case {i}")
        emitted += int((got[:, :, 0] != 0).sum())
    assert emitted > 300  # most calls emit tokens (the cases are not all empty)


@pytest.mark.parametrize("batch, vocab", [(4, 32000), (1, 151936)])
def test_decode_sizes_and_the_pool(batch, vocab):
    """Real vocabularies; past 2^18 entries of emitted rows the records go to the thread pool."""
    arrays, attrs = cases.case(np.random.default_rng(batch), batch=batch, vocab=vocab, width=20, tree=False)
    arrays["accept_num"] = np.full(batch, arrays["accept_tokens"].shape[1], np.int32)
    cases.assert_bit_equal(cases.run_arrays(arrays, attrs), cases.run_reference(arrays, attrs))


@pytest.mark.parametrize("simd", ["off", "avx2"])
def test_narrower_simd_levels_match_the_reference(simd):
    """The widest level runs above."""
    check_cases_at_level(
        simd, "logprobs_cases", "cases.cases(seed=5, count=60) + cases.cases(seed=6, count=2, vocab=32000)"
    )


def test_paddle_op_matches_the_reference():
    for i, (arrays, attrs) in enumerate(cases.cases(seed=12, count=40)):
        given = (None if arrays[n] is None else paddle.to_tensor(arrays[n]) for n in cases.NAMES)
        keys = ops.emitted_logprobs(*given, **attrs)
        cases.assert_bit_equal(keys.numpy(), cases.run_reference(arrays, attrs), f"case {i}")


def test_the_log_is_within_an_ulp_of_numpys():
    x = np.float32(np.exp(np.random.default_rng(0).uniform(0.0, 22.0, 100_000)))
    x = np.concatenate([x, np.float32([1.0, 2.0, 4.0, 256.0, np.nextafter(np.float32(1), np.float32(2))])])
    exact = np.log(x.astype(np.float64))
    ulps = np.abs(softmax_log(x) - exact) / np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    assert ulps.max() < 1.0
    assert softmax_log(np.float32([1.0]))[0] == 0.0


def semantic_case(rng, vocab=300):
    logits = (rng.standard_normal((5, vocab)) * 3).astype(np.float32)
    logits[1, 10:60] = logits[1].max()  # a plateau across the listed width: the smallest ids listed
    logits[2, : vocab - 3] = -np.inf  # three tokens left: the list ends in -inf, smallest ids first
    logits[3, 7] = 80.0  # one token holds (almost) all the mass
    return logits


@pytest.mark.parametrize("temperature", [1.0, 0.5, 2.0, 0.0])
def test_records_hold_the_float64_semantics(temperature):
    """Each record decodes to token_logprobs' values (to float32 rounding) and exactly its ids: the list is
    ordered by the scaled logit, as the float64 log-probability is."""
    rng = np.random.default_rng(3)
    logits, width = semantic_case(rng), 20
    tokens = np.array([[4, 1, 0, 200, 8]], np.int64)
    tokens[0, 2] = 5  # a banned token (row 2): -inf
    keys = ops.emitted_logprobs(
        paddle.to_tensor(logits),
        paddle.to_tensor(np.float32([temperature])),
        paddle.to_tensor(np.int32([0, 5])),
        paddle.to_tensor(tokens),
        paddle.to_tensor(np.int32([5])),
        width=width,
    ).numpy()[0]
    values, ids = decode(keys)
    tau = 1.0 if temperature == 0 else temperature  # a greedy request's reads 1
    chosen, top_ids, top_values = token_logprobs(logits, np.full(5, tau), tokens[0], width)
    np.testing.assert_array_equal(ids[:, 0], tokens[0])
    np.testing.assert_allclose(values[:, 0], chosen, rtol=1e-6, atol=1e-5)
    np.testing.assert_array_equal(ids[:, 1:], top_ids)
    np.testing.assert_allclose(values[:, 1:], top_values, rtol=1e-6, atol=1e-5)
    assert values[2, 0] == -np.inf and (values[2, 4:] == -np.inf).all()
    np.testing.assert_array_equal(ids[1, 1 : width + 1], np.arange(10, 10 + width))


def call(logits, width, accept_num=1, tokens=(0,), temperature=1.0, nodes=None):
    logits = np.float32(logits).reshape(-1, np.shape(logits)[-1])
    given = [
        logits,
        np.float32([temperature]),
        np.int32([0, len(logits)]),
        np.int64([list(tokens)]),
        np.int32([accept_num]),
        None if nodes is None else np.int32([list(nodes)]),
    ]
    keys = ops.emitted_logprobs(*(None if a is None else paddle.to_tensor(a) for a in given), width=width).numpy()
    cases.assert_bit_equal(keys, cases.run_reference(dict(zip(cases.NAMES, given)), {"width": width}))
    return keys[0]


def test_a_width_past_the_vocabulary_lists_every_token_then_zeros():
    keys = call([[1.0, 3.0, 2.0]], width=5, tokens=[1])
    values, ids = decode(keys[0, :4])
    np.testing.assert_array_equal(ids, [1, 1, 2, 0])
    assert values[0] == values[1] and (keys[0, 4:] == 0).all()


def test_a_row_without_log_probabilities_reads_minus_infinity():
    for row in ([0.0, np.nan, 1.0], [-np.inf] * 3, [0.0, np.inf, 1.0]):
        values, ids = decode(call([row], width=2, tokens=[2])[0])
        assert (values == -np.inf).all()
        np.testing.assert_array_equal(ids, [2, 0, 1])


def test_tokens_not_emitted_hold_zeros_and_trees_read_their_nodes():
    logits = np.float32([[0.0, 1.0], [5.0, 0.0], [0.0, 9.0]])
    keys = call(logits, width=1, accept_num=2, tokens=[1, 0, 1], nodes=[0, 2, 1])
    assert (keys[2] == 0).all()
    _, ids = decode(keys[:2])
    np.testing.assert_array_equal(ids, [[1, 1], [0, 1]])  # token 1 of slot 0 drawn at node 2: row 2's best is 1


def test_bad_arguments_name_the_op_and_the_argument():
    arrays, attrs = cases.case(np.random.default_rng(0), batch=2, vocab=16, width=3, tree=False)
    given = [None if arrays[n] is None else paddle.to_tensor(arrays[n]) for n in cases.NAMES]
    with pytest.raises(ValueError, match="emitted_logprobs.*width"):
        ops.emitted_logprobs(*given, width=-1)
    given[4] = paddle.to_tensor(np.zeros(3, np.int32))
    with pytest.raises(ValueError, match="emitted_logprobs.*accept_num"):
        ops.emitted_logprobs(*given, width=3)

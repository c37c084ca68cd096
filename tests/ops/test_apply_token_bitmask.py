"""apply_token_bitmask: the CPU kernel (pointer API) and the Paddle op against the numpy reference, bit
for bit, on random and edge calls in every logits dtype; the reference against llguidance's own numpy
masking; the rules by hand; rows without a mask untouched."""

from __future__ import annotations

import numpy as np
import paddle
import pytest

import fastspec.arrays
import fastspec.ops as ops
from fastspec import reference as ref
from fastspec.reference.bitmask import allowed_tokens
from tests.helpers import bitmask_cases as cases


def test_random_calls_match_the_reference():
    masked = 0
    for i, (arrays, attrs) in enumerate(cases.cases(seed=37, count=300)):
        got = cases.run_arrays(arrays, attrs)
        cases.assert_bit_equal(got, cases.run_reference(arrays, attrs), f"case {i}")
        masked += int(
            np.isneginf(got.astype(np.float32)).sum() > np.isneginf(arrays["logits"].astype(np.float32)).sum()
        )
    assert masked > 100  # most calls mask something (the cases are not all free rows)


@pytest.mark.parametrize("dtype", cases.DTYPES)
def test_large_vocab_and_the_pool(dtype):
    """V = 151936 (a real vocabulary) over 12 rows: past 2^20 entries the rows go to the thread pool."""
    rng = np.random.default_rng(len(dtype))
    arrays, attrs = cases.case(rng, rows=12, vocab=151936, dtype=dtype)
    cases.assert_bit_equal(cases.run_arrays(arrays, attrs), cases.run_reference(arrays, attrs))


def test_the_rules_by_hand():
    logits = np.array([[1.0, 2.0, 3.0, 4.0]] * 4, np.float32)
    mask = np.array([[0b0101], [-1], [0]], np.int32)
    out = logits.copy()
    fastspec.arrays.apply_token_bitmask(out, mask, np.array([0, 1, 2, -1], np.int32))
    inf = float("inf")
    assert out.tolist() == [[1.0, -inf, 3.0, -inf], [1.0, 2.0, 3.0, 4.0], [-inf] * 4, [1.0, 2.0, 3.0, 4.0]]
    # tokens past the mask's 32 W are forbidden; an index outside [0, M) leaves the row alone
    wide = np.zeros((2, 40), np.float32)
    fastspec.arrays.apply_token_bitmask(wide, np.array([[-1]], np.int32), np.array([0, 1], np.int32))
    assert np.isneginf(wide[0, 32:]).all() and (wide[0, :32] == 0).all() and (wide[1] == 0).all()
    # bit 31 of a word (the sign bit of the int32) is token 31
    row = np.zeros((1, 32), np.float32)
    fastspec.arrays.apply_token_bitmask(row, np.array([[np.int32(-(2**31))]], np.int32), np.zeros(1, np.int32))
    assert np.isneginf(row[0, :31]).all() and row[0, 31] == 0


def test_kept_entries_keep_their_bits():
    """NaN payloads, -0.0 and infinities of allowed tokens, and every entry of a free row, are left as they were."""
    patterns = np.array([0x7FC00001, 0xFFC12345, 0x80000000, 0x7F800000, 0xFF800000, 0x3F800000], np.uint32)
    logits = np.tile(patterns.view(np.float32), (2, 1))
    out = logits.copy()
    fastspec.arrays.apply_token_bitmask(out, np.array([[0b110101]], np.int32), np.array([0, -1], np.int32))
    bits = out.view(np.uint32)
    assert (bits[1] == patterns).all()
    keep = [0, 2, 4, 5]
    assert (bits[0, keep] == patterns[keep]).all() and (bits[0, [1, 3]] == 0xFF800000).all()


def test_reference_agrees_with_llguidance():
    """Our reference masks as llguidance's own numpy helper does (float32 rows, every row constrained)."""
    lln = pytest.importorskip("llguidance.numpy")
    rng = np.random.default_rng(3)
    for vocab in (1, 31, 32, 33, 1000):
        arrays, _ = cases.case(rng, rows=5, vocab=vocab, dtype="float32")
        logits = np.nan_to_num(arrays["logits"], nan=0.0)  # llguidance writes -inf by a float compare
        mask = arrays["token_bitmask"][np.arange(5) % len(arrays["token_bitmask"])]
        theirs = logits.copy()
        lln.apply_token_bitmask_inplace(theirs, mask)
        ours = ref.apply_token_bitmask(logits, mask, np.arange(5, dtype=np.int32))
        cases.assert_bit_equal(ours, theirs, f"V = {vocab}")


def test_allowed_tokens_of_llguidance_bitmask_layout():
    words = np.array([1 << 3, 1], np.int32)  # token 3 and token 32
    assert np.flatnonzero(allowed_tokens(words, 40)).tolist() == [3, 32]


@pytest.mark.parametrize("dtype", cases.DTYPES)
def test_paddle_op_matches_the_reference(dtype):
    for i, (arrays, attrs) in enumerate(cases.cases(seed=len(dtype), count=20, dtype="float32")):
        if arrays["logits"].shape[0] == 0:
            continue
        logits = paddle.to_tensor(arrays["logits"])
        logits = logits if dtype == "float32" else logits.astype(dtype)
        host = dict(arrays, logits=logits.numpy())  # what the reference reads (bfloat16 as uint16 bits)
        want = cases.run_reference(host, attrs)
        out = ops.apply_token_bitmask(
            logits, paddle.to_tensor(arrays["token_bitmask"]), paddle.to_tensor(arrays["bitmask_index"])
        )
        cases.assert_bit_equal(out.numpy(), want, f"case {i}")
        cases.assert_bit_equal(logits.numpy(), want, f"case {i}: in place")

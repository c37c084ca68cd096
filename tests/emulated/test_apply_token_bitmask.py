"""apply_token_bitmask on the emulated XPU and the emulated CUDA device: bit-exact against the reference on
random calls in every launch, every logits dtype, and on rows of a real vocabulary (V = 151936)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import bitmask_cases as cases
from tests.helpers.devices import DEVICES, check_random_calls

pytestmark = pytest.mark.parametrize("device", DEVICES, ids=str)  # every test runs on both devices


def test_random_calls_match_the_reference(device):
    check_random_calls(
        device, cases.cases(seed=43, count=64), cases.run_arrays, cases.run_reference, cases.assert_bit_equal
    )


@pytest.mark.parametrize("dtype", cases.DTYPES)
def test_large_vocab_matches_the_reference(device, dtype):
    rng = np.random.default_rng(len(dtype) + 1)
    arrays, attrs = cases.case(rng, rows=3, vocab=151936, dtype=dtype)
    arrays["bitmask_index"] = np.array([0, -1, 0], np.int32)
    words = arrays["token_bitmask"].shape[1]
    arrays["token_bitmask"][0] = rng.integers(-(2**31), 2**31, words, dtype=np.int64).astype(np.int32)  # mixed words
    options = device.launch(device.wide[0])
    cases.assert_bit_equal(
        cases.run_arrays(arrays, attrs, **options), cases.run_reference(arrays, attrs), device.describe(options)
    )

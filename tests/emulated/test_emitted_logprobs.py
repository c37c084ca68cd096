"""emitted_logprobs on the emulated XPU and the emulated CUDA device: bit-exact against the reference on
random calls in every launch, and on rows of a real vocabulary (V = 32000)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import logprobs_cases as cases
from tests.helpers.devices import DEVICES, check_random_calls

pytestmark = pytest.mark.parametrize("device", DEVICES, ids=str)  # every test runs on both devices


def test_random_calls_match_the_reference(device):
    check_random_calls(
        device, cases.cases(seed=23, count=40), cases.run_arrays, cases.run_reference, cases.assert_bit_equal
    )


def test_large_vocab_matches_the_reference(device):
    arrays, attrs = cases.case(np.random.default_rng(7), batch=2, vocab=32000, width=20, tree=False)
    arrays["temperature"] = np.array([1.0, 0.6], np.float32)
    options = device.launch(device.wide[0])
    cases.assert_bit_equal(
        cases.run_arrays(arrays, attrs, **options), cases.run_reference(arrays, attrs), device.describe(options)
    )

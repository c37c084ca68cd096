"""temperature_softmax on the emulated XPU and the emulated CUDA device: bit-exact against the reference on
random calls in every launch, and on rows of real vocabularies (V = 32000 and 151936)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import softmax_cases as cases
from tests.helpers.devices import DEVICES, check_random_calls

pytestmark = pytest.mark.parametrize("device", DEVICES, ids=str)  # every test runs on both devices


def test_random_calls_match_the_reference(device):
    check_random_calls(
        device, cases.cases(seed=17, count=48), cases.run_arrays, cases.run_reference, cases.assert_bit_equal
    )


@pytest.mark.parametrize("vocab", [32000, 151936])
def test_large_vocab_matches_the_reference(device, vocab):
    arrays, attrs = cases.case(np.random.default_rng(vocab), rows=3, vocab=vocab, batch=3)
    arrays["batch_id_per_token_output"] = np.array([0, 1, 2], np.int32)
    arrays["temperature"] = np.array([1.0, 0.6, 0.0], np.float32)
    options = device.launch(device.wide[0])
    cases.assert_bit_equal(
        cases.run_arrays(arrays, attrs, **options), cases.run_reference(arrays, attrs), device.describe(options)
    )

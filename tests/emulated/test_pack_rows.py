"""pack_rows on the emulated XPU and the emulated CUDA device against the reference on random calls in every
launch, and on a large batch (more slots and rows than the CUDA block has threads)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import pack_rows_cases as cases
from tests.helpers.devices import DEVICES, check_random_calls

pytestmark = pytest.mark.parametrize("device", DEVICES, ids=str)  # every test runs on both devices


def test_random_calls_match_the_reference(device):
    check_random_calls(
        device, cases.cases(seed=29, count=64), cases.run_arrays, cases.run_reference, cases.assert_equal
    )


def test_a_large_batch(device):
    arrays, attrs = cases.case(np.random.default_rng(3), batch=700, k=5, proposal=True)
    arrays["batch_id_per_token_output"] = np.zeros(700 * 6, np.int32)
    options = device.launch(device.wide[0])
    cases.assert_equal(cases.run_arrays(arrays, attrs, **options), cases.run_reference(arrays, attrs))

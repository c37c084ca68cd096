"""step_status on the emulated XPU and the emulated CUDA device against the reference on random calls in every
launch, and on a large batch at the XPU's largest K."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import step_status_cases as cases
from tests.helpers.devices import DEVICES, check_random_calls

pytestmark = pytest.mark.parametrize("device", DEVICES, ids=str)  # every test runs on both devices


def test_random_calls_match_the_reference(device):
    check_random_calls(
        device, cases.cases(seed=67, count=48), cases.run_arrays, cases.run_reference, cases.assert_equal
    )


def test_a_large_batch(device):
    arrays, attrs = cases.case(np.random.default_rng(7), batch=300, k=127)
    options = device.launch(device.wide[0])
    cases.assert_equal(cases.run_arrays(arrays, attrs, **options), cases.run_reference(arrays, attrs))

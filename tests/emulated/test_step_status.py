"""step_status on the emulated XPU and the emulated CUDA device against the reference on random calls in every
launch, and on a large batch at the XPU's largest K."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import step_status_cases as cases
from tests.helpers.devices import DEVICES

devices = pytest.mark.parametrize("device", DEVICES, ids=str)


@devices
def test_random_calls_match_the_reference(device):
    for i, (arrays, attrs) in enumerate(cases.cases(seed=67, count=48)):
        options = device.launch(i)
        got = cases.run_arrays(arrays, attrs, **options)
        cases.assert_equal(got, cases.run_reference(arrays, attrs), f"case {i} {device.describe(options)}")


@devices
def test_a_large_batch(device):
    arrays, attrs = cases.case(np.random.default_rng(7), batch=300, k=127)
    options = device.launch(device.wide[0])
    cases.assert_equal(cases.run_arrays(arrays, attrs, **options), cases.run_reference(arrays, attrs))

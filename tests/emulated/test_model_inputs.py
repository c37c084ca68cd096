"""model_inputs on the emulated XPU and the emulated CUDA device against the reference on random calls in every
launch, and on a large batch of long rows."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import model_inputs_cases as cases
from tests.helpers.devices import DEVICES

devices = pytest.mark.parametrize("device", DEVICES, ids=str)


@devices
def test_random_calls_match_the_reference(device):
    for i, (arrays, attrs) in enumerate(cases.cases(seed=47, count=48)):
        options = device.launch(i)
        got = cases.run_arrays(arrays, attrs, **options)
        cases.assert_equal(got, cases.run_reference(arrays, attrs), f"case {i} {device.describe(options)}")


@devices
def test_a_large_batch(device):
    arrays, attrs = cases.case(np.random.default_rng(5), batch=64, k=5, cols=1500, wild=False)
    options = device.launch(device.wide[0])
    cases.assert_equal(cases.run_arrays(arrays, attrs, **options), cases.run_reference(arrays, attrs))

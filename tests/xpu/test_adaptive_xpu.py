"""adaptive_plan and adaptive_observe on the emulated XPU: bit-exact against the reference on
random and wild calls, on every grid, clusters forward and reversed (the plan runs on one cluster)."""

from __future__ import annotations

import pytest

from tests import adaptive_cases as cases
from tests.xpu.launches import describe, launch


@pytest.mark.parametrize("op", ["adaptive_plan", "adaptive_observe"])
def test_random_calls_match_the_reference(op):
    for i, (arrays, attrs) in enumerate(cases.cases(op, seed=21, count=48)):
        options = launch(i)
        cases.assert_bit_equal(op, cases.run_arrays(op, arrays, attrs, **options),
                               cases.run_reference(op, arrays, attrs), f"case {i} {describe(options)}")


@pytest.mark.parametrize("op", ["adaptive_plan", "adaptive_observe"])
def test_the_controller_batch_matches_the_reference(op):
    for i, (arrays, attrs) in enumerate(cases.cases(op, seed=22, count=2, b=256, k=5)):
        options = launch(i)
        cases.assert_bit_equal(op, cases.run_arrays(op, arrays, attrs, **options),
                               cases.run_reference(op, arrays, attrs), describe(options))

"""adaptive_plan and adaptive_observe's CUDA kernels on the emulated device: bit-exact against
the reference on random and wild calls, blocks and threads in every order the emulator runs."""

from __future__ import annotations

import pytest

from tests import adaptive_cases as cases
from tests.cuda_emu.launches import describe, launch


@pytest.mark.parametrize("op", ["adaptive_plan", "adaptive_observe"])
def test_random_calls_match_the_reference(op):
    for i, (arrays, attrs) in enumerate(cases.cases(op, seed=31, count=32)):
        options = launch(i)
        cases.assert_bit_equal(op, cases.run_arrays(op, arrays, attrs, **options),
                               cases.run_reference(op, arrays, attrs), f"case {i} {describe(options)}")


def test_a_plan_of_more_candidates_than_threads_matches_the_reference():
    # 300 x 6 = 1800 candidates on a block of 1024 threads: threads rank several each
    for i, (arrays, attrs) in enumerate(cases.cases("adaptive_plan", seed=32, count=1, b=300, k=5)):
        options = launch(i + 2)
        cases.assert_bit_equal("adaptive_plan", cases.run_arrays("adaptive_plan", arrays, attrs, **options),
                               cases.run_reference("adaptive_plan", arrays, attrs), describe(options))

"""adaptive_plan and adaptive_observe on the emulated XPU and the emulated CUDA device: bit-exact
against the reference on random and wild calls in every launch, and on the controller's batch
(B = 256, K = 5) and one of more candidates than a CUDA block has threads."""

from __future__ import annotations

from functools import partial

import pytest

from tests.helpers import adaptive_cases as cases
from tests.helpers.devices import DEVICES, check_random_calls

OPS = ("adaptive_plan", "adaptive_observe")
pytestmark = pytest.mark.parametrize("device", DEVICES, ids=str)  # every test runs on both devices


def check_op_calls(device, op: str, calls: list, first_launch: int = 0) -> None:
    run, reference = partial(cases.run_arrays, op), partial(cases.run_reference, op)
    check_random_calls(device, calls, run, reference, partial(cases.assert_bit_equal, op), first_launch)


@pytest.mark.parametrize("op", OPS)
def test_random_calls_match_the_reference(device, op):
    check_op_calls(device, op, cases.cases(op, seed=21, count=48))


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("batch", [256, 300])  # 300 x 6 = 1800 candidates: CUDA threads rank several each
def test_large_batches_match_the_reference(device, op, batch):
    check_op_calls(device, op, cases.cases(op, seed=batch, count=2, b=batch, k=5), first_launch=1)

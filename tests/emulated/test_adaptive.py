"""adaptive_plan and adaptive_observe on the emulated XPU and the emulated CUDA device: bit-exact
against the reference on random and wild calls in every launch, and on the controller's batch
(B = 256, K = 5) and one of more candidates than a CUDA block has threads."""

from __future__ import annotations

import pytest

from tests.helpers import adaptive_cases as cases
from tests.helpers.devices import DEVICES

OPS = ("adaptive_plan", "adaptive_observe")
devices = pytest.mark.parametrize("device", DEVICES, ids=str)


@devices
@pytest.mark.parametrize("op", OPS)
def test_random_calls_match_the_reference(device, op):
    for i, (arrays, attrs) in enumerate(cases.cases(op, seed=21, count=48)):
        options = device.launch(i)
        cases.assert_bit_equal(
            op,
            cases.run_arrays(op, arrays, attrs, **options),
            cases.run_reference(op, arrays, attrs),
            f"case {i} {device.describe(options)}",
        )


@devices
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("batch", [256, 300])  # 300 x 6 = 1800 candidates: CUDA threads rank several each
def test_large_batches_match_the_reference(device, op, batch):
    for i, (arrays, attrs) in enumerate(cases.cases(op, seed=batch, count=2, b=batch, k=5)):
        options = device.launch(i + 1)
        cases.assert_bit_equal(
            op,
            cases.run_arrays(op, arrays, attrs, **options),
            cases.run_reference(op, arrays, attrs),
            device.describe(options),
        )

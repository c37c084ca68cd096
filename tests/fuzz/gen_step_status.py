"""Well-formed random calls of step_status: the tests' calls (``tests/helpers/step_status_cases.py``: values at
the ends of their types, every flag, K up to the XPU's limit), now and then a batch of hundreds of slots."""

from __future__ import annotations

import numpy as np

from tests.helpers.step_status_cases import case


def step_status_call(rng: np.random.Generator) -> tuple[dict, dict]:
    if rng.random() < 0.05:
        return case(rng, batch=int(rng.integers(32, 600)))
    return case(rng)

"""Well-formed random calls of model_inputs: the tests' calls (``tests/helpers/model_inputs_cases.py``: the
packings pack_rows writes and wild ones: rows past the grid, huge and negative lengths, cu going backwards, row
ids outside the batch), now and then a large batch of long rows."""

from __future__ import annotations

import numpy as np

from tests.helpers.model_inputs_cases import case


def model_inputs_call(rng: np.random.Generator) -> tuple[dict, dict]:
    if rng.random() < 0.05:
        return case(rng, batch=int(rng.integers(32, 300)), cols=int(rng.integers(500, 5000)))
    return case(rng)

"""Well-formed random calls of temperature_softmax: the tests' calls (``tests/helpers/softmax_cases.py``:
vocabularies on and off a lane block, greedy, tiny, negative and non-finite temperatures, padding and wild
row ids, NaN, infinite, huge and equal logits), now and then rows of a real vocabulary or many short rows."""

from __future__ import annotations

import numpy as np

from tests.helpers.softmax_cases import case


def softmax_call(rng: np.random.Generator) -> tuple[dict, dict]:
    draw = rng.random()
    if draw < 0.05:
        return case(rng, rows=int(rng.integers(1, 3)), vocab=int(rng.choice([32000, 151936])))
    if draw < 0.15:
        return case(rng, rows=int(rng.integers(64, 300)), vocab=int(rng.integers(1, 80)), batch=64)
    return case(rng)

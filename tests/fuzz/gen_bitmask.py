"""Well-formed random calls of apply_token_bitmask: the tests' calls (``tests/helpers/bitmask_cases.py``: every
logits dtype, vocabularies on and off a word boundary, masks narrower and wider than the vocabulary,
free rows, indices outside the masks and wild ones, NaN and infinite logits), and now and then a
row of a real vocabulary (V = 151936) or many short rows."""

from __future__ import annotations

import numpy as np

from tests.helpers.bitmask_cases import case


def bitmask_call(rng: np.random.Generator) -> tuple[dict, dict]:
    draw = rng.random()
    if draw < 0.05:
        return case(rng, rows=int(rng.integers(1, 3)), vocab=151936)
    if draw < 0.15:
        return case(rng, rows=int(rng.integers(64, 300)), vocab=int(rng.integers(1, 80)))
    return case(rng)

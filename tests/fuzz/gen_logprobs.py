"""Well-formed random calls of emitted_logprobs: the tests' calls (``tests/helpers/logprobs_cases.py``: chains
and trees, wild counts, rows, tokens and temperatures, NaN, infinite, huge, equal and plateaued logits, widths
past V), now and then rows of a real vocabulary."""

from __future__ import annotations

import numpy as np

from tests.helpers.logprobs_cases import case


def logprobs_call(rng: np.random.Generator) -> tuple[dict, dict]:
    if rng.random() < 0.05:
        return case(rng, batch=int(rng.integers(1, 3)), vocab=32000, width=20)
    return case(rng)

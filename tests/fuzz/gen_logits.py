"""Well-formed random calls of process_logits.

The tests' calls (``tests/helpers/logits_cases.py``: small vocabularies so tokens repeat, chains and trees,
bad words cut from the output's tail, and in a third of the calls values a runner never makes: NaN
and infinite penalties, logits and bias values, ids outside the vocabulary, negative and huge
lengths, malformed trees, rows off their slot), K now and then at its limit and now and then a
longer history with a larger vocabulary.
"""

from __future__ import annotations

import numpy as np

from tests.helpers.logits_cases import case


def logits_call(rng: np.random.Generator) -> tuple[dict, dict]:
    wild = bool(rng.random() < 1 / 3)
    roll = rng.random()
    if roll < 0.05:
        return case(rng, k=127, wild=wild), {}
    if roll < 0.15:
        return case(rng, vocab=int(rng.integers(100, 2000)), max_len=int(rng.integers(100, 600)), wild=wild), {}
    return case(rng, wild=wild), {}

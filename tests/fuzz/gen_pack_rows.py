"""Well-formed random calls of pack_rows: the tests' calls (``tests/helpers/pack_rows_cases.py``: every slot
kind, with and without a proposal, lengths past K and negative, huge seq_lens_this_time, row capacities below
and above the packed rows), and now and then a large batch."""

from __future__ import annotations

import numpy as np

from tests.helpers.pack_rows_cases import case


def pack_rows_call(rng: np.random.Generator) -> tuple[dict, dict]:
    if rng.random() < 0.1:
        return case(rng, batch=int(rng.integers(100, 1500)), k=int(rng.integers(0, 9)))
    return case(rng)

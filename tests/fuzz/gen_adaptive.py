"""Well-formed random calls of adaptive_plan and adaptive_observe.

The tests' states (``tests/helpers/adaptive_cases.py``: decoding, free and prefilling slots, estimates tied
across slots, ``found`` at halves, and in a third of the calls values the controller never makes:
NaN, negative and infinite estimates and costs, wild row and accept counts), K now and then up to
the XPU's limit, and now and then the bench's B = 256, K = 5 with a run of near-equal worths
against slot order, long enough in some calls that the CPU sort's insertion pass stops at its
budget and the full radix sort takes over (``custom_ops/cpu/adaptive.cc``).
"""

from __future__ import annotations

import numpy as np

from fastspec.core.schema import XPU_MAX_DRAFTS
from tests.helpers.adaptive_cases import observe_case, plan_case, rise_against_slot_order


def _k(rng: np.random.Generator) -> int | None:
    return int(rng.choice([15, XPU_MAX_DRAFTS])) if rng.random() < 0.05 else None  # None: the tests' K


def plan_call(rng: np.random.Generator) -> tuple[dict, dict]:
    wild = bool(rng.random() < 1 / 3)
    if rng.random() < 0.1:
        arrays, attrs = plan_case(rng, b=256, k=5, wild=wild)
        rise_against_slot_order(arrays["acceptance"], int(rng.integers(2, 257)))
        return arrays, attrs
    return plan_case(rng, k=_k(rng), wild=wild)


def observe_call(rng: np.random.Generator) -> tuple[dict, dict]:
    return observe_case(rng, k=_k(rng), wild=bool(rng.random() < 1 / 3))

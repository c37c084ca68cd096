"""The calls ``python -m fastspec check`` runs: every op's example call (``fastspec.core.examples``)
once, an op with strategies once per strategy, with four slots drawn from ``seed``, small enough
that every backend, the emulated XPU included, runs all of them in well under a second. The tests
cover the edge cases; these show that each kernel runs and agrees with the numpy reference here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fastspec.core.examples import example_call
from fastspec.core.schema import SCHEMAS
from fastspec.reference.calls import reference_results

SLOTS = 4


@dataclass(frozen=True)
class Case:
    """One op call: its arrays by schema name (inputs only; outputs are allocated by the front end)."""

    name: str  # the table's row
    op: str
    arrays: dict[str, np.ndarray]
    attrs: dict[str, Any]

    def reference(self, arrays: dict[str, np.ndarray], attrs: dict[str, Any]) -> tuple[np.ndarray, ...]:
        """The reference's results of this call on ``arrays`` (``fastspec.reference.calls``)."""
        return reference_results(self.op, arrays, attrs)


def cases(seed: int = 0) -> list[Case]:
    """Every op once (an op with strategies once per strategy), on its example call's slots drawn from ``seed``."""
    found = []
    for name, op in SCHEMAS.items():
        arrays, attrs = example_call(name, SLOTS, seed=seed)
        if op.strategy_attr is None:
            found.append(Case(name, name, arrays, attrs))
            continue
        for strategy in op.attr(op.strategy_attr).choices:
            found.append(Case(f"{name} ({strategy})", name, arrays, {**attrs, op.strategy_attr: strategy}))
    return found

"""The calls ``python -m fastspec check`` runs: every op's example call (``fastspec.core.examples``)
once, an op with strategies once per strategy, with four slots drawn from ``seed``, small enough
that every backend, the emulated XPU included, runs all of them in well under a second. The tests
cover the edge cases; these show that each kernel runs and agrees with the numpy reference here.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import numpy as np

from fastspec import reference as ref
from fastspec.core.examples import example_call
from fastspec.core.schema import SCHEMAS

SLOTS = 4
# attributes the reference names otherwise (sample_tokens' random stream)
REFERENCE_ATTR_NAMES = {"rand_stream": "stream"}


@dataclass(frozen=True)
class Case:
    """One op call: its arrays by schema name (inputs only; outputs are allocated by the front end)."""

    name: str  # the table's row
    op: str
    arrays: dict[str, np.ndarray]
    attrs: dict[str, Any]

    def reference(self, arrays: dict[str, np.ndarray], attrs: dict[str, Any]) -> tuple[np.ndarray, ...]:
        """The reference's results of this call on ``arrays``: its function of the op's name, given the
        tensors the call's strategy reads by name (the rest as None) and the attributes by name; a
        reference that takes its tensors positionally (``*arrays``) gets the others in schema order."""
        op = SCHEMAS[self.op]
        strategy = attrs.get(op.strategy_attr) if op.strategy_attr else None
        tensors = {t.name: arrays.get(t.name) if t.used_by(strategy) else None for t in op.inputs}
        function = getattr(ref, self.op)
        params = inspect.signature(function).parameters
        named = {name: value for name, value in tensors.items() if name in params}
        positional = [value for name, value in tensors.items() if name not in params]
        if not any(p.kind is p.VAR_POSITIONAL for p in params.values()):
            positional = []
        given = {REFERENCE_ATTR_NAMES.get(name, name): value for name, value in attrs.items()}
        result = function(*positional, **named, **given)
        return result if isinstance(result, tuple) else (result,)


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

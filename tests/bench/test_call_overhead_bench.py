"""bench/bench_call_overhead.py times every op of the schema, each strategy of an op that has
them, on calls the checks accept (every op must have rows). The timing runs in the
benchmark, not here (docs/performance.md)."""

from __future__ import annotations

import pytest

import fastspec.arrays
from bench.bench_call_overhead import CASES, inputs
from fastspec.core.schema import SCHEMAS


def test_every_op_and_every_strategy_has_a_case():
    expected = set()
    for name, op in SCHEMAS.items():
        strategies = op.attr(op.strategy_attr).choices if op.strategy_attr else ()
        expected |= {f"{name}[{s}]" for s in strategies} or {name}
    assert {label for label, _, _ in CASES} == expected


@pytest.mark.parametrize("label, op_name, attrs", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("batch", [2, 256])
def test_every_case_is_a_call_the_checks_accept(label, op_name, attrs, batch):
    arrays = {name: value for name, value in inputs(op_name, batch, attrs).items() if value is not None}
    getattr(fastspec.arrays, op_name)(**arrays, **attrs)  # raises FastspecArgumentError naming what is wrong

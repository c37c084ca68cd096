"""Runs one case through ``fastspec.arrays`` and judges it against the reference.

Outcomes: ``ok`` (every returned tensor has the reference's bits and no read-only input
changed), ``rejected`` (the schema refused a call broken on purpose: not a finding), or a
finding: a mismatch, an input the op wrote, an unexpected exception, a well-formed call
refused, a broken call accepted, or the reference itself failing. (A sanitizer report
kills the process: the supervisor turns that into a finding.)
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass

import numpy as np

from fastspec import arrays
from fastspec.core.errors import FastspecArgumentError
from fastspec.core.schema import SCHEMAS

from .case import Case
from .targets import TARGETS

EXPECT_AUTO = "auto"  # broken on purpose: refused; otherwise: the reference's bits
EXPECT_EITHER = "reference-or-rejected"  # a corpus case from before the schema refused it


@dataclass(frozen=True)
class Outcome:
    kind: str  # "ok", "rejected" or "finding"
    finding: str = ""  # what kind of finding
    detail: str = ""

    @property
    def is_finding(self) -> bool:
        return self.kind == "finding"


def _finding(what: str, detail: str) -> Outcome:
    return Outcome("finding", what, detail)


def same_bits(got, want: np.ndarray, any_nan: bool = False) -> bool:
    """The same array to the bit; with ``any_nan``, a float NaN matches a NaN of any bits."""
    if not (isinstance(got, np.ndarray) and got.shape == want.shape and got.dtype == want.dtype):
        return False
    if any_nan and got.dtype.kind == "f":
        nan = np.isnan(got)
        if not np.array_equal(nan, np.isnan(want)):
            return False
        got, want = np.where(nan, np.nan, got), np.where(nan, np.nan, want)
    return np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes()


def describe_difference(name: str, got, want: np.ndarray) -> str:
    if not isinstance(got, np.ndarray) or got.shape != want.shape or got.dtype != want.dtype:
        shape = getattr(got, "shape", None)
        return (
            f"{name}: got {type(got).__name__} {shape} {getattr(got, 'dtype', '')}, expected {want.shape} {want.dtype}"
        )
    g, w = np.ascontiguousarray(got), np.ascontiguousarray(want)
    bits = "u1" if g.dtype == np.bool_ else f"u{g.dtype.itemsize}"
    where = np.argwhere(g.view(bits) != w.view(bits))[:4]
    pairs = "; ".join(
        f"{tuple(int(i) for i in at)}: got {g[tuple(at)].item()!r} expected {w[tuple(at)].item()!r}" for at in where
    )
    return f"{name}: {len(np.argwhere(g.view(bits) != w.view(bits)))} entries differ ({pairs})"


def run_case(case: Case, expect: str = EXPECT_AUTO) -> Outcome:
    op = SCHEMAS[case.op]
    given = case.copy()  # what the kernel gets and writes; `case` keeps the inputs for the reference
    unchecked = False
    try:
        try:
            result = getattr(arrays, case.op)(**given.arrays, **given.attrs, **given.options)
        except FastspecArgumentError as error:
            if case.malformed or expect == EXPECT_EITHER:
                return Outcome("rejected", detail=str(error))
            if not TARGETS[case.target].refuses_values(case.arrays):
                return _finding("refused a well-formed call", f"{type(error).__name__}: {error}")
            # values named on the host (a malformed tree): a device stream launches them unchecked, and the
            # kernels must judge them safely; the results are the outputs the case hands in
            given, unchecked = case.copy(), True
            arrays.prepare(case.op, **given.arrays, **given.attrs, **given.options)()
            result = tuple(given.arrays[name] for name in op.returns)
    except Exception:  # noqa: BLE001 (any other exception is a finding)
        return _finding("unexpected exception", traceback.format_exc(limit=4))
    if case.malformed:
        return _finding("accepted a malformed call", case.malformed)

    try:
        expected = TARGETS[case.target].reference(case.arrays, case.attrs)
    except Exception:  # noqa: BLE001
        return _finding("reference failed", traceback.format_exc(limit=4))
    returned = dict(zip(op.returns, result if isinstance(result, tuple) else (result,)))
    problems = []
    for name, want in expected.items():
        if unchecked and given.arrays.get(name) is None:
            continue  # an optional output left out: an unchecked launch has nowhere to write it
        got = given.arrays[name] if op.tensor(name).inplace else returned[name]
        if not same_bits(got, want, TARGETS[case.target].any_nan):
            problems.append(describe_difference(name, got, want))
        if given.arrays.get(name) is not None and name in returned and returned[name] is not given.arrays[name]:
            problems.append(f"{name}: the op returned another array than the caller's")
    for t in op.inputs:
        before = case.arrays.get(t.name)
        if not t.inplace and before is not None and not same_bits(given.arrays[t.name], before):
            problems.append(
                f"{t.name} (read-only) was written: " + describe_difference(t.name, given.arrays[t.name], before)
            )
    return _finding("mismatch", "\n".join(problems)) if problems else Outcome("ok")

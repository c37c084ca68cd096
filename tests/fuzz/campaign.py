"""Cases from a seed, and a campaign over a range of them, in this process.

Case ``index`` of target ``target`` under ``seed`` depends on nothing else
(``numpy.random.default_rng([seed, crc32(target), index])``), so any case replays alone.
Every ``EXAMPLE_EVERY``-th case starts from its op's example call (``fastspec.core.examples``, the
one written call that docs, ``fastspec check``, tests and benches share), its slots drawn again to
1..8 of them, where the example is of the target's strategy; the others are drawn by the target's
generator. Of every case: half get adversarial values, a tenth is broken on purpose, a fifth have
per-request tensors shaped ``[B, 1]``, an eighth (a twentieth for the sampling ops) run on the
emulated XPU (a grid of tests/helpers/devices.py, clusters forward or reversed), the rest on the
CPU kernels inline or on their thread pool.
"""

from __future__ import annotations

import time
import zlib
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np

from fastspec.core.examples import example_call
from fastspec.core.schema import SCHEMAS, XPU_MAX_DRAFTS, XPU_MAX_END_TOKENS, XPU_MAX_STOP_COLS
from tests.helpers.devices import XPU_GRIDS as GRIDS

from .case import Case
from .check import Outcome, run_case
from .malform import malform
from .targets import TARGETS
from .values import adversarial, case_dims

ADVERSARIAL_SHARE = 0.5
MALFORMED_SHARE = 0.1
COLUMN_SHARE = 0.2
EXAMPLE_EVERY = 16


def case_rng(target: str, seed: int, index: int) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(target.encode()), index])


def _as_columns(rng: np.random.Generator, case: Case) -> None:
    """Per-request tensors as [B, 1] (SPEC: [B] or [B, 1]), each with even odds."""
    for t in SCHEMAS[case.op].tensors:
        value = case.arrays.get(t.name)
        if t.shape == "[B] | [B, 1]" and isinstance(value, np.ndarray) and value.ndim == 1 and rng.random() < 0.5:
            case.arrays[t.name] = value.reshape(-1, 1)


def _options(rng: np.random.Generator, case: Case) -> dict:
    dims = case_dims(case)
    fits_xpu = (
        dims.get("K", 0) <= XPU_MAX_DRAFTS
        and dims.get("E", 1) <= XPU_MAX_END_TOKENS
        and max(dims.get("S", 1), dims.get("SS", 1)) <= XPU_MAX_STOP_COLS
    )
    if fits_xpu and rng.random() < TARGETS[case.target].xpu_share:
        grid = GRIDS[int(rng.integers(0, len(GRIDS)))]
        return {"backend": "xpu_emulator", "xpu_grid": grid, "xpu_reverse_clusters": bool(rng.random() < 0.5)}
    return {"num_threads": int(rng.choice([0, 1]))}


def _from_example(rng: np.random.Generator, target: str, index: int) -> tuple[dict, dict] | None:
    """The op's example call with 1..8 of its slots, or None where the example is not of the target's strategy."""
    op = TARGETS[target].op
    arrays, attrs = example_call(op)
    strategy = target[len(op) + 1 : -1] if target != op else None
    if strategy is not None and str(getattr(attrs.get("strategy"), "value", attrs.get("strategy"))) != strategy:
        return None
    return example_call(op, batch=1 + (index // EXAMPLE_EVERY) % 8, seed=int(rng.integers(0, 2**31)))


def make_case(target: str, seed: int, index: int) -> Case:
    rng = case_rng(target, seed, index)
    seeded = _from_example(rng, target, index) if index % EXAMPLE_EVERY == 0 else None
    arrays, attrs = seeded or TARGETS[target].generate(rng)
    names = [t.name for t in SCHEMAS[TARGETS[target].op].tensors]
    arrays = {name: None if arrays.get(name) is None else np.ascontiguousarray(arrays[name]) for name in names}
    case = Case(target, arrays, attrs, origin=f"{target}:{seed}:{index}")
    if rng.random() < COLUMN_SHARE:
        _as_columns(rng, case)
    if rng.random() < ADVERSARIAL_SHARE:
        case.origin += " adversarial " + ",".join(adversarial(rng, case))
    case.options = _options(rng, case)
    if rng.random() < MALFORMED_SHARE:
        case.malformed = malform(rng, case)
    return case


@dataclass
class Tally:
    """What a campaign over one target saw (``found``: the findings themselves, this process's)."""

    target: str
    cases: int = 0
    ok: int = 0
    rejected: int = 0  # broken on purpose and refused by the schema: expected, not findings
    xpu: int = 0
    crashes: int = 0  # cases that killed their process (a sanitizer report, a signal)
    findings: int = 0
    seconds: float = 0.0
    found: list[dict] = field(default_factory=list)

    def count(self, case: Case, outcome: Outcome) -> None:
        self.cases += 1
        self.ok += outcome.kind == "ok"
        self.rejected += outcome.kind == "rejected"
        self.findings += outcome.is_finding
        self.xpu += case.options.get("backend") == "xpu_emulator"

    def counts(self) -> dict:
        """Every field but ``found``: what a worker reports and carries over a crash."""
        return {k: v for k, v in asdict(self).items() if k != "found"}


def run_range(
    target: str,
    seed: int,
    start: int,
    stop: int,
    *,
    before: Callable[[int, Tally], None] | None = None,
    on_finding: Callable[[dict], None] | None = None,
    on_progress: Callable[[Tally], None] | None = None,
    progress_seconds: float = 1.0,
    carried: dict | None = None,
) -> Tally:
    """Cases ``start .. stop - 1`` of ``target``; ``before(index, tally)`` runs before each case
    (the worker records the case and the counts so far there, so a crash names the case).
    ``carried``: counts of earlier cases of the same campaign to count on from."""
    tally = Tally(**{"target": target, **(carried or {})})
    offset = tally.seconds
    began = last = time.perf_counter()
    for index in range(start, stop):
        if before:
            tally.seconds = offset + time.perf_counter() - began
            before(index, tally)
        case = make_case(target, seed, index)
        outcome = run_case(case)
        tally.count(case, outcome)
        if outcome.is_finding:
            finding = {
                "target": target,
                "seed": seed,
                "index": index,
                "kind": outcome.finding,
                "detail": outcome.detail,
                "case": case.describe(),
            }
            tally.found.append(finding)
            if on_finding:
                on_finding(finding)
        now = time.perf_counter()
        tally.seconds = offset + now - began
        if on_progress and now - last >= progress_seconds:
            last = now
            on_progress(tally)
    return tally

"""Runs a campaign in worker processes and survives them dying.

Each target's cases are split in two halves (the second with ``FASTSPEC_SIMD=off``: the
portable loops), plus one unit for the corpus; ``jobs`` workers run at a time. A worker reports
the cases that killed its forked children itself (tests/fuzz/worker.py); a worker that dies
itself (the corpus runs in the worker) or falls silent (a hang) becomes a finding named by the
case it had started (its state file), and a new worker resumes after that case. A range stops
after ``max_crashes``. Every finding is written, with its case, under ``out``.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import sanitizer
from .campaign import make_case
from .case import save
from .corpus import CORPUS_DIR
from .reports import death, report_summary

ROOT = Path(__file__).resolve().parents[2]
COUNTS = ("cases", "ok", "rejected", "xpu", "crashes")


@dataclass
class Unit:
    """A range of cases of one target (or the corpus) for one worker at a time."""

    target: str  # or "corpus"
    start: int
    stop: int
    simd: str = ""  # FASTSPEC_SIMD for its workers ("": the best the CPU has)
    crashes: int = 0

    def command(self, seed: int, state: Path, abort_at: int, max_crashes: int) -> list[str]:
        worker = [sys.executable, "-m", "tests.fuzz.worker", "--state", str(state)]
        if self.target == "corpus":
            return worker + ["--corpus", str(CORPUS_DIR.relative_to(ROOT)), "--skip", str(self.start)]
        extra = ["--abort-at", str(abort_at)] if abort_at >= 0 else []
        return worker + [
            "--target",
            self.target,
            "--seed",
            str(seed),
            "--start",
            str(self.start),
            "--stop",
            str(self.stop),
            "--max-crashes",
            str(max(1, max_crashes - self.crashes)),
            *extra,
        ]


@dataclass
class Totals:
    cases: int = 0
    ok: int = 0
    rejected: int = 0
    xpu: int = 0
    seconds: float = 0.0
    findings: int = 0
    crashes: int = 0

    @property
    def rate(self) -> float:
        """Cases per second of worker time (process start-up excluded)."""
        return self.cases / self.seconds if self.seconds else 0.0


@dataclass
class Running:
    unit: Unit
    process: subprocess.Popen
    state: Path
    stderr: Path
    last_line: float
    tally: dict = field(default_factory=dict)  # the worker's latest progress
    ended: bool = False
    hung: bool = False


class Supervisor:
    def __init__(
        self,
        *,
        targets: list[str],
        cases: int,
        seed: int,
        jobs: int,
        sanitize: bool,
        corpus: bool,
        out: Path,
        max_crashes: int = 5000,
        hang_seconds: float = 300.0,
        abort_at: int = -1,
        progress_seconds: float = 15.0,
    ):
        self.seed, self.jobs, self.sanitize, self.out = seed, max(1, jobs), sanitize, out
        self.max_crashes, self.hang_seconds, self.abort_at = max_crashes, hang_seconds, abort_at
        self.progress_seconds = progress_seconds
        self.pending: list[Unit] = [Unit("corpus", 0, 0)] if corpus else []
        half = (cases + 1) // 2
        for target in targets:
            self.pending += [Unit(target, 0, half), Unit(target, half, cases, simd="off")]
        self.pending = [u for u in self.pending if u.target == "corpus" or u.stop > u.start]
        self.totals = {u.target: Totals() for u in self.pending}
        self.findings: list[dict] = []
        self.lines: queue.Queue = queue.Queue()
        self.env = sanitizer.environment() if sanitize else dict(os.environ)
        self.env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), self.env.get("PYTHONPATH", "")]))
        self.counter = 0

    # --- workers ------------------------------------------------------------------------
    def start(self, unit: Unit) -> Running:
        self.counter += 1
        work = self.out / "work"
        work.mkdir(parents=True, exist_ok=True)
        state, stderr = work / f"state-{self.counter}.json", work / f"stderr-{self.counter}.txt"
        env = dict(self.env)
        if unit.simd:
            env["FASTSPEC_SIMD"] = unit.simd
        process = subprocess.Popen(
            unit.command(self.seed, state, self.abort_at, self.max_crashes),
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=open(stderr, "w"),
            text=True,  # noqa: SIM115
            start_new_session=True,
        )
        running = Running(unit, process, state, stderr, time.monotonic())
        threading.Thread(target=self._read, args=(running,), daemon=True).start()
        return running

    def _read(self, running: Running) -> None:
        for line in running.process.stdout:
            self.lines.put((running, line))
        self.lines.put((running, None))

    def run(self) -> int:
        """The campaign; 1 on any finding. Interrupted (Ctrl-C, SIGTERM): the figures so far, and 130."""
        active: list[Running] = []
        began = time.monotonic()
        previous = signal.signal(signal.SIGTERM, signal.default_int_handler)  # as Ctrl-C: finish below
        try:
            self._run(active, began)
        except KeyboardInterrupt:
            print("[fuzz] interrupted: the figures so far", flush=True)
            self.print_summary(time.monotonic() - began, self._live_totals(active), interrupted=True)
            return 130
        finally:
            signal.signal(signal.SIGTERM, previous)
            for running in active:  # no worker outlives the campaign
                if running.process.poll() is None:
                    os.killpg(running.process.pid, signal.SIGKILL)
        self.print_summary(time.monotonic() - began, self.totals)
        return 1 if self.findings else 0

    def _run(self, active: list, began: float) -> None:
        last_print = time.monotonic()
        while self.pending or active:
            while self.pending and len(active) < self.jobs:
                active.append(self.start(self.pending.pop(0)))
            try:
                running, line = self.lines.get(timeout=1.0)
            except queue.Empty:
                running, line = None, ""
            if running is not None and line is None:
                active.remove(running)
                self._finished(running)
            elif running is not None:
                running.last_line = time.monotonic()
                try:
                    self._event(running, json.loads(line))
                except json.JSONDecodeError:  # not the worker's protocol: pass it on
                    print(line, end="", flush=True)
            for stuck in [r for r in active if not r.hung and time.monotonic() - r.last_line > self.hang_seconds]:
                stuck.hung = True  # the reader thread then reports the end, and _finished the hang
                os.killpg(stuck.process.pid, signal.SIGKILL)
            if time.monotonic() - last_print >= self.progress_seconds:
                last_print = time.monotonic()
                self.print_progress(active, time.monotonic() - began)

    def _event(self, running: Running, event: dict) -> None:
        kind = event.pop("event")
        if kind in ("progress", "end"):
            running.tally = event
            running.ended = kind == "end"
        elif kind == "finding":
            self._record(running.unit, event)
        elif kind == "note":
            print(f"[fuzz] {running.unit.target}: {event['text']}", flush=True)

    def _finished(self, running: Running) -> None:
        code = running.process.wait()
        totals = self.totals[running.unit.target]
        died = not (running.ended and code == 0)
        state = self._state(running.state) if died else {}
        tally = state.get("tally") or running.tally  # a worker that died: its counts before the fatal case
        for name in COUNTS:
            setattr(totals, name, getattr(totals, name) + tally.get(name, 0))
        totals.seconds += tally.get("seconds", 0.0)
        if not died:
            return
        signature, excerpt = report_summary(running.stderr.read_text(errors="replace"))
        what = f"hang (no answer in {self.hang_seconds:.0f} s)" if running.hung else death(code)
        unit = running.unit
        position = state.get("number" if unit.target == "corpus" else "index")
        if position is None:
            what = f"worker died before its first case (exit {code})"
        totals.crashes += 1
        totals.cases += position is not None  # the case that died
        self._record(
            unit,
            {
                "target": state.get("target", unit.target),
                "seed": state.get("seed"),
                "index": position if unit.target != "corpus" else None,
                "corpus": state.get("corpus"),
                "kind": what,
                "signature": signature,
                "detail": excerpt,
                "stderr": str(running.stderr),
            },
        )
        unit.crashes += 1
        if position is None:  # nothing to resume after
            return
        if unit.crashes >= self.max_crashes:
            print(f"[fuzz] {unit.target}: {unit.crashes} crashes, stopping this unit at case {position}", flush=True)
        elif unit.target == "corpus" or position + 1 < unit.stop:
            self.pending.insert(0, Unit(unit.target, position + 1, unit.stop, unit.simd, unit.crashes))

    @staticmethod
    def _state(path: Path) -> dict:
        try:
            return json.loads(path.read_text().strip() or "{}")
        except (OSError, json.JSONDecodeError):
            return {}

    # --- findings -----------------------------------------------------------------------
    def _record(self, unit: Unit, finding: dict) -> None:
        finding["simd"] = unit.simd
        finding["replay"] = self.replay_command(finding)
        self.totals[unit.target].findings += 1
        same = [
            f
            for f in self.findings
            if f["target"] == finding["target"]
            and f["kind"] == finding["kind"]
            and f.get("signature") == finding.get("signature")
        ]
        if len(same) < 10 and finding.get("index") is not None:  # keep the first ten of a kind as cases
            path = self.out / "findings" / f"{finding['target']}-{finding['seed']}-{finding['index']}.json"
            case = make_case(finding["target"], finding["seed"], finding["index"])
            save(
                case,
                path,
                name=path.stem,
                note=f"{finding['kind']}: {finding.get('signature') or finding['detail'][:300]}",
            )
            finding["saved"] = str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
        self.findings.append(finding)
        if len(same) < 3:
            print(
                f"[fuzz] FINDING {finding['kind']} in {finding['target']}: {self._first_line(finding)}\n"
                f"       replay: {finding['replay']}",
                flush=True,
            )

    @staticmethod
    def _first_line(finding: dict) -> str:
        return finding.get("signature") or ((finding.get("detail") or "").splitlines() or [""])[0][:300]

    def replay_command(self, finding: dict) -> str:
        if finding.get("corpus") is None and finding.get("index") is None:
            return f"(no case to replay: the worker's stderr is {finding.get('stderr')})"
        which = finding.get("corpus") or f"{finding['target']}:{finding['seed']}:{finding['index']}"
        simd = f"FASTSPEC_SIMD={finding['simd']} " if finding.get("simd") else ""
        return f"{simd}python -m tests.fuzz --replay '{which}'" + (" --sanitize" if self.sanitize else "")

    # --- printing -----------------------------------------------------------------------
    def _live_totals(self, active: list[Running]) -> dict[str, Totals]:
        live = {name: Totals(**vars(t)) for name, t in self.totals.items()}
        for r in active:
            t = live[r.unit.target]
            for name in COUNTS:
                setattr(t, name, getattr(t, name) + r.tally.get(name, 0))
            t.seconds += r.tally.get("seconds", 0.0)
        return live

    def print_progress(self, active: list[Running], elapsed: float) -> None:
        live = self._live_totals(active)
        parts = [f"{name} {t.cases} ({t.rate:.0f}/s, {t.findings} found)" for name, t in live.items() if t.cases]
        print(f"[fuzz] {elapsed:.0f}s: " + "; ".join(parts), flush=True)
        self.write_summary(elapsed, live, interrupted=True)  # so far: survives a kill

    def write_summary(self, elapsed: float, totals: dict[str, Totals], interrupted: bool) -> None:
        summary = {
            "seed": self.seed,
            "sanitize": self.sanitize,
            "wall_seconds": elapsed,
            "complete": not interrupted,
            "totals": {k: vars(v) for k, v in totals.items()},
            "findings": self.findings,
        }
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "last_run.json").write_text(json.dumps(summary, indent=1) + "\n")

    def print_summary(self, elapsed: float, totals: dict[str, Totals], interrupted: bool = False) -> None:
        print(
            f"\n{'target':34} {'cases':>7} {'ok':>7} {'refused':>7} {'xpu':>6} {'crashes':>7} {'cases/s':>8} "
            f"{'findings':>8}"
        )
        for name, t in totals.items():
            print(f"{name:34} {t.cases:7} {t.ok:7} {t.rejected:7} {t.xpu:6} {t.crashes:7} {t.rate:8.0f} {t.findings:8}")
        library = "ASan + UBSan bindings" if self.sanitize else "normal bindings"
        print(f"seed {self.seed}, {library}, {elapsed:.0f} s wall, {len(self.findings)} findings")
        by_kind: dict[tuple[str, str, str], list[dict]] = {}
        order = list(self.totals)
        for f in sorted(self.findings, key=lambda f: order.index(f["target"]) if f["target"] in order else -1):
            by_kind.setdefault((f["target"], f["kind"], f.get("signature") or ""), []).append(f)
        for (target, kind, signature), group in by_kind.items():
            first = group[0]
            print(f"  {len(group):5} x {kind} in {target}: {signature or self._first_line(first)}")
            print(f"          e.g. {first['replay']}" + (f"  (case: {first['saved']})" if "saved" in first else ""))
        self.write_summary(elapsed, totals, interrupted)

"""One fuzzing process: a range of cases of one target, or the corpus, reported as JSON lines.

    python -m tests.fuzz.worker --target T --seed S --start A --stop B --state FILE
    python -m tests.fuzz.worker --corpus DIR --state FILE [--skip N]

The supervisor (tests/fuzz/supervisor.py) starts it, under the sanitizers when asked. Before
each case it writes the case's name to ``--state`` and flushes, so when a sanitizer report or a
signal kills the process the supervisor knows which case did it and resumes after it. Lines on
stdout: ``start`` (the library loaded), ``progress``, ``finding``, ``end``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from fastspec import kernels

from .campaign import Tally, run_range
from .check import EXPECT_AUTO, run_case
from .corpus import corpus_files, load_entry


def emit(event: str, **fields) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


class StateFile:
    """The case about to run, rewritten (and flushed) before every case."""

    def __init__(self, path: str | None):
        self.file = open(path, "w") if path else None  # noqa: SIM115 (kept open for the whole run)

    def write(self, text: str) -> None:
        if self.file:
            self.file.seek(0)
            self.file.write(text)
            self.file.truncate()
            self.file.flush()


def run_cases(args: argparse.Namespace, state: StateFile) -> Tally:
    def before(index: int, tally: Tally) -> None:
        state.write(json.dumps({"target": args.target, "seed": args.seed, "index": index, "tally": counts(tally)}))
        if index == args.abort_at:
            os.abort()  # as a sanitizer report would

    return run_range(args.target, args.seed, args.start, args.stop, before=before,
                     on_finding=lambda finding: emit("finding", **finding),
                     on_progress=lambda tally: emit("progress", **counts(tally)))


def counts(tally: Tally) -> dict:
    return {k: v for k, v in tally.as_dict().items() if k != "findings"} | {"findings": len(tally.findings)}


def run_corpus(args: argparse.Namespace, state: StateFile) -> Tally:
    tally = Tally("corpus")
    for number, path in enumerate(corpus_files(Path(args.corpus))):
        if number < args.skip:
            continue
        case, meta = load_entry(path)
        state.write(json.dumps({"corpus": str(path), "number": number, "target": case.target,
                                "tally": counts(tally)}))
        outcome = run_case(case, meta.get("expect", EXPECT_AUTO))
        tally.count(case, outcome)
        if outcome.is_finding:
            finding = {"target": case.target, "corpus": str(path), "kind": outcome.finding,
                       "detail": outcome.detail, "case": case.describe()}
            tally.findings.append(finding)
            emit("finding", **finding)
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--stop", type=int, default=0)
    parser.add_argument("--corpus")
    parser.add_argument("--skip", type=int, default=0, help="corpus files to skip (resuming after a crash)")
    parser.add_argument("--state")
    parser.add_argument("--abort-at", type=int, default=-1,
                        help="abort() before case N (a test of the supervisor's crash handling)")
    args = parser.parse_args(argv)

    library = kernels.module().__file__
    if os.environ.get(kernels.KERNELS_LIB_ENV) == "sanitize" and not library.startswith(str(kernels.SANITIZE_LIB_DIR)):
        raise SystemExit(f"asked for the sanitized library, loaded {library}")
    emit("start", library=library, pid=os.getpid())
    state = StateFile(args.state)
    tally = run_corpus(args, state) if args.corpus else run_cases(args, state)
    emit("end", **counts(tally))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""One fuzzing process: a range of cases of one target, or the corpus, reported as JSON lines.

    python -m tests.fuzz.worker --target T --seed S --start A --stop B --state FILE
    python -m tests.fuzz.worker --corpus DIR --state FILE [--skip N]

The supervisor (tests/fuzz/supervisor.py) starts it, under the sanitizers when asked. Before
each case it writes the case's name and the counts so far to ``--state`` and flushes, so the
case that kills a process is known. A target's cases run in forked children of this process
(numpy, the reference and the library already loaded, no kernel run yet, so no thread
started): when a sanitizer report kills a child, this process reports the case as a finding,
with the report's first lines, and forks the next child after it, which costs a fork instead of
a new interpreter. Lines on stdout: ``start`` (the library loaded), ``progress``, ``finding``,
``end``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from pathlib import Path

from fastspec import arrays

from .campaign import Tally, run_range
from .check import EXPECT_AUTO, run_case
from .corpus import corpus_files, load_entry
from .reports import death, report_summary


def emit(event: str, **fields) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


class StateFile:
    """The case about to run and the counts so far, rewritten (and flushed) before every case."""

    def __init__(self, path: Path):
        self.path = path
        self.file = open(path, "w")  # noqa: SIM115 (kept open for the whole run)

    def write(self, state: dict) -> None:
        self.file.seek(0)
        self.file.write(json.dumps(state))
        self.file.truncate()
        self.file.flush()

    def read(self) -> dict:
        try:
            return json.loads(self.path.read_text() or "{}")
        except (OSError, json.JSONDecodeError):
            return {}


def _child(args: argparse.Namespace, state: StateFile, start: int, carried: dict, stderr: Path) -> None:
    """Runs cases start .. stop - 1 in this (forked) process; never returns."""
    code = 0
    try:
        os.dup2(os.open(stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)  # a report goes here

        def before(index: int, tally: Tally) -> None:
            state.write({"target": args.target, "seed": args.seed, "index": index, "tally": tally.counts()})
            if index == args.abort_at:
                os.abort()  # as a sanitizer report would

        tally = run_range(
            args.target,
            args.seed,
            start,
            args.stop,
            before=before,
            carried=carried,
            on_finding=lambda finding: emit("finding", **finding),
            on_progress=lambda t: emit("progress", **t.counts()),
        )
        state.write({"target": args.target, "done": True, "tally": tally.counts()})
    except BaseException:  # noqa: BLE001 (reported by the parent from the stderr file)
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def run_cases(args: argparse.Namespace, state: StateFile) -> Tally:
    carried = Tally(args.target).counts()
    start = args.start
    stderr = Path(f"{state.path}.child-stderr")
    while start < args.stop:
        pid = os.fork()
        if pid == 0:
            _child(args, state, start, carried, stderr)
        _, status = os.waitpid(pid, 0)
        last = state.read()
        report = stderr.read_text(errors="replace") if stderr.exists() else ""
        sys.stderr.write(report)  # the worker's own stderr keeps every report
        if last.get("done") and os.waitstatus_to_exitcode(status) == 0:
            return Tally(**last["tally"])
        index = last.get("index")
        if index is None or last.get("done"):
            raise SystemExit(f"a child died before its first case:\n{report[-3000:]}")
        code = os.waitstatus_to_exitcode(status)
        what = death(code)
        signature, excerpt = report_summary(report)
        carried = {
            **last["tally"],
            "cases": last["tally"]["cases"] + 1,
            "crashes": last["tally"]["crashes"] + 1,
            "findings": last["tally"]["findings"] + 1,
        }
        emit("finding", target=args.target, seed=args.seed, index=index, kind=what, signature=signature, detail=excerpt)
        emit("progress", **carried)
        if carried["crashes"] >= args.max_crashes:
            emit("note", text=f"{carried['crashes']} crashes: stopping this range after case {index}")
            break
        start = index + 1
    return Tally(**carried)


def run_corpus(args: argparse.Namespace, state: StateFile) -> Tally:
    tally = Tally("corpus")
    for number, path in enumerate(corpus_files(Path(args.corpus))):
        if number < args.skip:
            continue
        case, meta = load_entry(path)
        state.write({"corpus": str(path), "number": number, "target": case.target, "tally": tally.counts()})
        outcome = run_case(case, meta.get("expect", EXPECT_AUTO))
        tally.count(case, outcome)
        if outcome.is_finding:
            emit(
                "finding",
                target=case.target,
                corpus=str(path),
                kind=outcome.finding,
                detail=outcome.detail,
                case=case.describe(),
            )
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--stop", type=int, default=0)
    parser.add_argument("--max-crashes", type=int, default=5000)
    parser.add_argument("--corpus")
    parser.add_argument("--skip", type=int, default=0, help="corpus files to skip (resuming after a crash)")
    parser.add_argument("--state", type=Path, required=True)
    parser.add_argument("--abort-at", type=int, default=-1, help="abort() before case N (a test of the crash handling)")
    args = parser.parse_args(argv)

    library = arrays.module().__file__
    if os.environ.get(arrays.KERNELS_LIB_ENV) == "sanitize" and not library.startswith(str(arrays.SANITIZE_LIB_DIR)):
        raise SystemExit(f"asked for the sanitized library, loaded {library}")
    emit("start", library=library, pid=os.getpid())
    state = StateFile(args.state)
    tally = run_corpus(args, state) if args.corpus else run_cases(args, state)
    emit("end", **tally.counts())
    return 0


if __name__ == "__main__":
    sys.exit(main())

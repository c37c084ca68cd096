"""fastspec's fuzzer (docs/fuzzing.md).

    python -m tests.fuzz --short [--sanitize]     a few thousand cases per op and the corpus (CI)
    python -m tests.fuzz --long --sanitize        10^5 cases per op (make fuzz)
    python -m tests.fuzz --replay ngram_match:1:523 [--sanitize] [--save FILE]
    python -m tests.fuzz --replay tests/fuzz/corpus/FILE.json [--sanitize]

Every case is a call of one op through fastspec.arrays (CPU kernels, an eighth on the
emulated XPU), compared bit for bit with fastspec.reference. ``--sanitize`` runs the workers
on the ASan + UBSan bindings (``python setup_ops.py --bindings-only --sanitize`` builds them).
Exits 1 on any finding: a mismatch, an unexpected exception or refusal, a broken call
accepted, a sanitizer report, a crash or a hang.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from . import sanitizer

SHORT_CASES = 2000
LONG_CASES = 100_000
ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "build" / "fuzz"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    from .targets import TARGETS

    parser = argparse.ArgumentParser(
        prog="python -m tests.fuzz", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    size = parser.add_mutually_exclusive_group()
    size.add_argument(
        "--short",
        action="store_const",
        dest="cases",
        const=SHORT_CASES,
        help=f"{SHORT_CASES} cases per target (the default)",
    )
    size.add_argument(
        "--long", action="store_const", dest="cases", const=LONG_CASES, help=f"{LONG_CASES} cases per target"
    )
    size.add_argument("--cases", type=int, help="cases per target")
    parser.add_argument(
        "--targets", default=",".join(TARGETS), help="comma-separated targets (default: all): " + ", ".join(TARGETS)
    )
    parser.add_argument("--seed", type=int, default=1, help="the campaign's seed (default 1)")
    parser.add_argument("--sanitize", action="store_true", help="run on the ASan + UBSan bindings")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes at a time")
    corpus = parser.add_mutually_exclusive_group()
    corpus.add_argument("--no-corpus", action="store_true", help="do not replay tests/fuzz/corpus")
    corpus.add_argument("--corpus-only", action="store_true", help="replay the corpus only")
    parser.add_argument(
        "--max-crashes",
        type=int,
        default=5000,
        help="crashes per half of a target before that half stops (default 5000)",
    )
    parser.add_argument("--hang-seconds", type=float, default=300.0, help="a worker silent this long is a hang")
    parser.add_argument("--progress-seconds", type=float, default=15.0)
    parser.add_argument("--out", type=Path, default=OUT, help="findings and the run's summary (build/fuzz)")
    parser.add_argument("--replay", metavar="TARGET:SEED:INDEX|FILE", help="run one case here and show it")
    parser.add_argument("--save", type=Path, help="with --replay: write the case as a corpus file")
    parser.add_argument("--abort-at", type=int, default=-1, help=argparse.SUPPRESS)  # tests the crash path
    args = parser.parse_args(argv)
    args.cases = args.cases or SHORT_CASES
    args.targets = [t for t in args.targets.split(",") if t]
    unknown = set(args.targets) - set(TARGETS)
    if unknown:
        parser.error(f"unknown targets {sorted(unknown)}; known: {', '.join(TARGETS)}")
    return args


def under_sanitizers() -> bool:
    return os.environ.get("FASTSPEC_KERNELS_LIB") == "sanitize" and "libasan" in os.environ.get("LD_PRELOAD", "")


def replay(args: argparse.Namespace) -> int:
    """One case in this process (re-executed under the sanitizers first when asked)."""
    if args.sanitize and not under_sanitizers():
        env = sanitizer.environment(stacks=True)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
        os.execve(sys.executable, [sys.executable, "-m", "tests.fuzz", *sys.argv[1:]], env)
    import numpy as np

    from .campaign import make_case
    from .case import save
    from .check import EXPECT_AUTO, run_case
    from .corpus import load_entry

    if args.replay.endswith(".json"):
        case, meta = load_entry(Path(args.replay))
        expect = meta.get("expect", EXPECT_AUTO)
        print(f"{meta.get('name', args.replay)}: {meta.get('note', '')}")
    else:
        target, seed, index = args.replay.rsplit(":", 2)
        case, expect = make_case(target, int(seed), int(index)), EXPECT_AUTO
    print(case.origin)
    print(case.describe())
    with np.printoptions(threshold=64, edgeitems=8, linewidth=150):
        for name, value in case.arrays.items():
            if isinstance(value, np.ndarray) and value.ndim == 2 and value.shape[1] == 1:
                value = value.reshape(-1)  # a [B, 1] tensor, on one line
            if value is not None:
                print(f"  {name} = {value!r}".replace("\n", "\n    "))
    print("running it...", flush=True)  # a sanitizer report follows on stderr and ends the process
    outcome = run_case(case, expect)
    print(f"outcome: {outcome.kind}" + (f" ({outcome.finding})" if outcome.finding else ""))
    if outcome.detail:
        print(outcome.detail)
    if args.save:
        save(case, args.save, name=args.save.stem, note=f"from {case.origin}: {outcome.finding or outcome.kind}")
        print(f"saved {args.save}")
    return 1 if outcome.is_finding else 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.sanitize and not sanitizer.sanitized_library_built():
        print(
            "[fuzz] no sanitized bindings: run `python setup_ops.py --bindings-only --sanitize` (or make fuzz)",
            file=sys.stderr,
        )
        return 2
    if args.replay:
        return replay(args)
    from .supervisor import Supervisor

    targets = [] if args.corpus_only else args.targets
    print(
        f"[fuzz] {args.cases if targets else 0} cases per target x {len(targets)} targets, seed {args.seed}, "
        f"{'ASan + UBSan' if args.sanitize else 'normal'} bindings, {args.jobs} workers",
        flush=True,
    )
    return Supervisor(
        targets=targets,
        cases=args.cases,
        seed=args.seed,
        jobs=args.jobs,
        sanitize=args.sanitize,
        corpus=not args.no_corpus,
        out=args.out,
        max_crashes=args.max_crashes,
        hang_seconds=args.hang_seconds,
        abort_at=args.abort_at,
        progress_seconds=args.progress_seconds,
    ).run()


if __name__ == "__main__":
    sys.exit(main())

"""The ``fastspec`` command: its arguments and the dispatch to ``info`` and ``check``."""

from __future__ import annotations

from collections.abc import Sequence

from fastspec.cli.errors import ArgumentParser, choice_list, int_range, user_errors

PROG = "fastspec"


def parser() -> ArgumentParser:
    from fastspec.cli.check import FAMILIES

    top = ArgumentParser(
        prog=PROG,
        description="fastspec: speculative-decoding ops for PaddlePaddle. "
        "`fastspec COMMAND --help` for a command's options.",
    )
    commands = top.add_subparsers(dest="command", metavar="COMMAND", required=True)
    info = commands.add_parser(
        "info",
        help="versions, libraries, backends and settings of this install",
        description="What this install of fastspec is and what it will run on this "
        "machine: versions, where the libraries load from, what each backend "
        "holds (SIMD levels, CUDA architectures, XPU), environment variables.",
    )
    info.add_argument("--json", action="store_true", help="print JSON instead of text")
    check = commands.add_parser(
        "check",
        help="run every op on every backend here against the numpy reference",
        description="Runs every op once on small random inputs on every backend this "
        "install and machine have (each SIMD level, the emulated XPU, CUDA, "
        "Paddle) and compares with the numpy reference. Exit status 1 on "
        "any failure.",
    )
    check.add_argument(
        "--only",
        type=choice_list(FAMILIES),
        default=",".join(FAMILIES),
        help=f"comma-separated backend families to run (default: all of {','.join(FAMILIES)})",
    )
    check.add_argument("--seed", type=int_range(0), default=0, help="seed of the random inputs")
    return top


@user_errors(PROG)
def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "info":
        from fastspec.cli import info

        return info.main(args)
    from fastspec.cli import check

    return check.main(args)

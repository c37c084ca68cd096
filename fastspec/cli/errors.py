"""One-line errors for fastspec's command lines (``python -m fastspec``, the demo, the benchmarks).

A mistake a user can make on a command line (a missing or unreadable file, invalid YAML, an
unknown key, a value out of range or of the wrong type, a backend this build lacks) prints
``<program>: error: <what, where, what is allowed>`` and exits 2, as argparse does for its own
errors; ``--debug`` shows the traceback as well. Any other exception is a bug and keeps its
traceback. A script uses it in two lines::

    @user_errors()                       # main(argv=None) -> int
    def main(argv=None):
        parser = ArgumentParser(...)     # argparse's, plus --debug
        parser.add_argument("--batch", type=int_range(1), default=8)

Ranges are checked where arguments are parsed (the ``*_range`` and ``*_list`` types below), so
the message names the argument.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fastspec.core.errors import FastspecBuildError
from fastspec.runtime.config import ConfigError


class UserError(Exception):
    """A mistake on the command line or in a file it names; the message says what was wrong,
    where, and what is allowed."""


# ConfigError: a config key or value (a file's, or one a flag overrode); FastspecBuildError: a
# library this install lacks, with the command that builds it.
USER_ERRORS: tuple[type[BaseException], ...] = (UserError, ConfigError, FastspecBuildError)


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser with ``--debug`` (the traceback of a user error too)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.add_argument("--debug", action="store_true", help="show the traceback of an error as well")


def user_errors(prog: str | None = None) -> Callable[[Callable[..., int]], Callable[..., int]]:
    """Decorates ``main(argv=None) -> int``: a user error becomes one line on stderr and exit
    status 2 (its traceback too with ``--debug``). ``prog`` defaults to argparse's (the script's name)."""

    def decorate(main: Callable[..., int]) -> Callable[..., int]:
        @functools.wraps(main)
        def wrapper(argv: Sequence[str] | None = None) -> int:
            words = sys.argv[1:] if argv is None else list(argv)
            try:
                return main(argv)
            except USER_ERRORS as error:
                if "--debug" in words:
                    raise
                print(f"{prog or os.path.basename(sys.argv[0])}: error: {one_line(error)}", file=sys.stderr)
                return 2
            except BrokenPipeError:  # the reader left (`| head`): stop quietly, as other tools do
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                return 1

        wrapper.handles_user_errors = True  # type: ignore[attr-defined]  (tests/cli check every script has it)
        return wrapper

    return decorate


def one_line(error: BaseException) -> str:
    """The error's message on one line (a multi-line message is joined with '; ')."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return "; ".join(lines) or type(error).__name__


# --- argparse types: the range is checked where the argument is parsed ---------------------------


def _bounds(low: float | None, high: float | None, low_open: bool = False, high_open: bool = False) -> str:
    if high is None:
        return f"> {low}" if low_open else f">= {low}"
    if low is None:
        return f"< {high}" if high_open else f"<= {high}"
    return f"in {'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"


def int_range(low: int | None = None, high: int | None = None) -> Callable[[str], int]:
    """An integer in [low, high] (either bound may be None)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
        if (low is not None and value < low) or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"must be an integer {_bounds(low, high)}, got {value}")
        return value

    parse.__name__ = "integer"
    return parse


def float_range(
    low: float | None = None, high: float | None = None, low_open: bool = False, high_open: bool = False
) -> Callable[[str], float]:
    """A finite number in [low, high] (a bound left out with low_open / high_open; either may be None)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
        too_low = low is not None and (value <= low if low_open else value < low)
        too_high = high is not None and (value >= high if high_open else value > high)
        if value != value or abs(value) == float("inf") or too_low or too_high:
            raise argparse.ArgumentTypeError(f"must be a number {_bounds(low, high, low_open, high_open)}, got {text}")
        return value

    parse.__name__ = "number"
    return parse


def int_list(low: int | None = None, high: int | None = None) -> Callable[[str], list[int]]:
    """A comma-separated list of integers in [low, high], at least one."""
    item = int_range(low, high)

    def parse(text: str) -> list[int]:
        words = [w.strip() for w in text.split(",") if w.strip()]
        if not words:
            raise argparse.ArgumentTypeError(f"must be a comma-separated list of integers, got {text!r}")
        try:
            return [item(w) for w in words]
        except argparse.ArgumentTypeError as error:
            raise argparse.ArgumentTypeError(f"every item {error}") from None

    parse.__name__ = "list"
    return parse


def choice_list(choices: Sequence[str]) -> Callable[[str], list[str]]:
    """A comma-separated list of names out of ``choices``, at least one."""

    def parse(text: str) -> list[str]:
        words = [w.strip() for w in text.split(",") if w.strip()]
        wrong = [w for w in words if w not in choices]
        if not words or wrong:
            raise argparse.ArgumentTypeError(f"must be a comma-separated list of {', '.join(choices)}; got {text!r}")
        return words

    parse.__name__ = "list"
    return parse


def readable_file(text: str) -> str:
    """A path to a file that exists and can be read."""
    path = Path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"no such file: '{text}'")
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"'{text}' is not a file")
    if not os.access(path, os.R_OK):
        raise argparse.ArgumentTypeError(f"cannot read '{text}': permission denied")
    return text


# --- files a command line names -------------------------------------------------------------


def load_config(path: str | Path, flag: str = "--config") -> Any:
    """``SpeculativeConfig.from_yaml(path)``, its failures as user errors naming ``flag`` and the
    file: unreadable, invalid YAML (with line and column), unknown key, bad value."""
    import yaml

    from fastspec.runtime.config import SpeculativeConfig

    try:
        return SpeculativeConfig.from_yaml(path)
    except OSError as error:
        raise UserError(f"{flag} {path}: cannot read it: {error.strerror or error}") from error
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or one_line(error)
        raise UserError(f"{flag} {path}: invalid YAML{where}: {problem}") from error
    except ConfigError as error:
        raise UserError(f"{flag} {error}") from error  # from_yaml's message starts with the path

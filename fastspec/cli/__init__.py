"""fastspec's command line: ``python -m fastspec info|check`` (the ``fastspec`` console script).

``info`` (:mod:`fastspec.cli.info`) says what this install is and what it runs here; ``check``
(:mod:`fastspec.cli.check`) runs every op on every backend here against the numpy reference.
:mod:`fastspec.cli.errors` turns a user's mistake on any fastspec command line (this one, the
demo's, the benchmarks') into one line and exit status 2; :mod:`fastspec.cli.command` parses the
command line. From Python: ``fastspec.cli.check.run_check()``.
"""

from fastspec.cli.command import PROG, main, parser

__all__ = ["PROG", "main", "parser"]

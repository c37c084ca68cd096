"""Runs ``python -m <module> <args>`` from the repository root, as a user would, for the tests of commands."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers.paths import ROOT


def run_module(module: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """The finished process (text stdout and stderr captured); the caller checks its return code."""
    return subprocess.run(
        [sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )

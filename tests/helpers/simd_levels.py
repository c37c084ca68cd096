"""An op's random calls checked against the reference at a capped SIMD level: FASTSPEC_SIMD is read once a
process, so each level runs in a fresh one."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.helpers.paths import ROOT

SCRIPT = r"""
from tests.helpers import {module} as cases
for i, (arrays, attrs) in enumerate({calls}):
    cases.assert_bit_equal(cases.run_arrays(arrays, attrs), cases.run_reference(arrays, attrs), f"case {{i}}")
"""


def check_cases_at_level(simd: str, module: str, calls: str) -> None:
    """``module``: a case module of tests/helpers (``cases``, ``run_arrays``, ``run_reference``,
    ``assert_bit_equal``); ``calls``: a Python expression over it (``cases``) giving the calls."""
    env = {**os.environ, "FASTSPEC_SIMD": simd}
    script = SCRIPT.format(module=module, calls=calls)
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]

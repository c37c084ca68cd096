"""`python -m fastspec info` (text and --json) on this build."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import fastspec
from fastspec.cli import info
from tests.helpers.paths import ROOT


def run_info(*args: str, **env: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "fastspec", "info", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture(scope="module")
def as_json() -> dict:
    return json.loads(run_info("--json", FASTSPEC_SIMD="off", FASTSPEC_NUM_THREADS="3", FASTSPEC_TYPO="1").stdout)


def test_json_reports_versions_and_libraries(as_json):
    import numpy

    assert as_json["versions"]["fastspec"] == fastspec.__version__
    assert as_json["versions"]["numpy"] == numpy.__version__
    assert as_json["versions"]["python"] == ".".join(map(str, sys.version_info[:3]))
    libraries = as_json["libraries"]
    assert libraries["op_library"]["built"] and Path(libraries["op_library"]["path"]).name == "fastspec_ops.so"
    assert libraries["bindings"]["built"] and Path(libraries["bindings"]["path"]).name.startswith("fastspec_kernels")
    assert Path(libraries["bindings"]["path"]).parent == ROOT / "fastspec" / "_lib"


def test_json_reports_what_the_kernels_picked_under_the_environment(as_json):
    import setup_ops

    cpu = as_json["backends"]["cpu"]
    assert cpu["simd_picked"] == "scalar"  # FASTSPEC_SIMD=off
    assert cpu["threads"] == 3  # FASTSPEC_NUM_THREADS=3
    assert cpu["simd_compiled"][0] == "scalar"
    if setup_ops.host_simd_level() != "unknown":  # /proc/cpuinfo, read independently of the kernels
        assert cpu["simd_cpu"] == setup_ops.host_simd_level()
    env = as_json["environment"]
    assert env["FASTSPEC_SIMD"]["value"] == "off" and env["FASTSPEC_NUM_THREADS"]["value"] == "3"
    assert env["FASTSPEC_TYPO"] == {"value": "1", "meaning": "unknown to fastspec"}
    assert env["FASTSPEC_MARCH"]["value"] is None


def test_json_cuda_archs_are_the_builds(as_json):
    import setup_ops

    cuda = as_json["backends"]["cuda"]
    if not cuda["bindings"]:
        assert cuda["archs"] == [] or cuda["op_library"]
        return
    assert cuda["archs"] == setup_ops.cuda_archs()  # this checkout was built with the same environment
    assert cuda["op_library"] is True and as_json["libraries"]["op_library"]["facts"]["cuda_archs"] == cuda["archs"]


def test_text_names_each_library_backend_and_setting():
    text = run_info(FASTSPEC_SIMD="avx2").stdout
    assert text.startswith(f"fastspec {fastspec.__version__} at {ROOT / 'fastspec'}")
    assert re.search(r"op library .* built +\S+fastspec_ops\.so", text)
    assert re.search(r"bindings .* built +\S+fastspec_kernels\S*\.so", text)
    assert re.search(r"^  cpu +SIMD levels compiled: scalar", text, re.M)
    assert re.search(r"^  cuda +compiled: bindings (yes|no), op library (yes|no)", text, re.M)
    assert re.search(r"^  xpu +emulated on host threads .*: yes", text, re.M)
    assert re.search(r"^  FASTSPEC_SIMD=avx2 +run time", text, re.M)


def test_without_the_bindings_it_says_so(monkeypatch):
    from fastspec import arrays

    def missing():
        raise fastspec.FastspecBuildError("fastspec's pybind11 bindings are not built: run `python setup_ops.py`")

    monkeypatch.setattr(arrays, "module", missing)
    data = info.collect()
    assert data["backends"]["cpu"] is None and data["backends"]["cuda"]["bindings"] is None
    text = info.render(data)
    assert "bindings are not built" in text and "cpu   unknown: the bindings do not load" in text


def test_every_environment_variable_fastspec_reads_is_listed():
    """A FASTSPEC_* name read from the environment anywhere in the library or the build is in info's table."""
    read = set()
    sources = [
        *ROOT.glob("fastspec/**/*.py"),
        *ROOT.glob("custom_ops/**/*.cc"),
        *ROOT.glob("custom_ops/**/*.h"),
        ROOT / "setup_ops.py",
        ROOT / "setup.py",
    ]
    for path in sources:
        read |= set(
            re.findall(r"""(?:getenv|environ\.get|environ\[|_ENV =)\(?\s*["'](FASTSPEC_[A-Z0-9_]+)""", path.read_text())
        )
    assert {"FASTSPEC_SIMD", "FASTSPEC_NUM_THREADS", "FASTSPEC_KERNELS_LIB"} <= read  # the search finds them
    assert read <= set(info.ENVIRONMENT)

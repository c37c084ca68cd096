"""The build is portable: no -march=native unless asked for, and the SIMD paths are chosen
(and can be switched off) at run time, giving the same results as the portable loops.

The pip install path has its own check, tests/check_pip_install.sh (run by .ci/run).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT

LEVELS = {"scalar": 0, "avx2": 1, "avx512": 2}


@pytest.fixture(scope="module")
def setup_ops():
    spec = importlib.util.spec_from_file_location("setup_ops_under_test", ROOT / "setup_ops.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compiles(commands: list[list[str]]) -> list[list[str]]:
    """The g++ compile commands (the ones -march applies to)."""
    return [cmd for cmd in commands if cmd[0] == "g++" and "-c" in cmd]


def test_default_build_is_portable(setup_ops, monkeypatch):
    monkeypatch.delenv("FASTSPEC_MARCH", raising=False)
    commands = setup_ops.planned_commands([])
    sources = {Path(cmd[cmd.index("-c") + 1]).name for cmd in compiles(commands)}
    assert {"sampling.cc", "find_token.cc", "cpu_features.cc"} <= sources
    assert sum(cmd[:2] == ["g++", "-shared"] for cmd in commands) == 2  # the op library and the bindings
    marches = [arg for cmd in commands for arg in cmd if arg.startswith("-march") or arg == "-mnative"]
    assert marches == [], f"the default build ties the libraries to this CPU: {sorted(set(marches))}"


@pytest.mark.parametrize("how", ["--native", "FASTSPEC_MARCH=native"])
def test_native_build_is_opt_in(setup_ops, monkeypatch, how):
    monkeypatch.delenv("FASTSPEC_MARCH", raising=False)
    argv = ["--cuda", "off"]
    if how == "--native":
        argv.append("--native")
    else:
        monkeypatch.setenv("FASTSPEC_MARCH", "native")
    cpu = compiles(setup_ops.planned_commands(argv))
    assert cpu and all("-march=native" in cmd for cmd in cpu)


def xpu_kernel_compiles(commands: list[list[str]]) -> dict[str, list[list[str]]]:
    """The compile commands of the .xpu files, by compiler name."""
    found: dict[str, list[list[str]]] = {}
    for cmd in commands:
        if "-c" in cmd and cmd[cmd.index("-c") + 1].endswith(".xpu"):
            found.setdefault(Path(cmd[0]).name, []).append(cmd)
    return found


def test_the_emulated_xpu_kernels_are_always_built(setup_ops, monkeypatch):
    monkeypatch.delenv("CLANG_PATH", raising=False)
    commands = setup_ops.planned_commands(["--cuda", "off"])
    by_compiler = xpu_kernel_compiles(commands)
    assert set(by_compiler) == {"g++"}  # no XTDK here: the host emulation only
    names = {Path(cmd[cmd.index("-c") + 1]).name for cmd in by_compiler["g++"]}
    assert {"ngram_match.xpu", "sample_tokens.xpu", "verify_draft_tokens.xpu", "probes.xpu"} <= names
    assert all(cmd[cmd.index("-c") - 2 : cmd.index("-c")] == ["-x", "c++"] for cmd in by_compiler["g++"])


def test_an_xtdk_compiles_the_kernels_for_the_device(setup_ops, monkeypatch, tmp_path):
    """With CLANG_PATH naming an XTDK, the Paddle op library gets the device kernels (XPU_NOTES §6
    flags) and the XRE runtime; the bindings keep the emulation."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "clang++").write_text("#!/bin/sh\n")
    monkeypatch.setenv("CLANG_PATH", str(tmp_path))
    monkeypatch.setenv("XRE_PATH", str(tmp_path / "xre"))
    commands = setup_ops.planned_commands(["--cuda", "off"])
    xtdk = xpu_kernel_compiles(commands)["clang++"]
    arrays = {path.name for path in (ROOT / "custom_ops" / "xpu").glob("*.xpu")}
    # every kernel file and no other (the probes are not device code); a new op's files are found, not counted
    assert arrays and {Path(cmd[cmd.index("-c") + 1]).name for cmd in xtdk} == arrays
    for cmd in xtdk:
        assert {"--xpu-arch=xpu3", "-std=c++11", "-DFASTSPEC_XTDK", "-D__XPU3__", "-fxpu-launch-return"} <= set(cmd)
    launchers = [cmd for cmd in commands if "--xpu-host-only" in cmd]
    hosts = {path.name for path in (ROOT / "custom_ops" / "xpu" / "host").glob("*.cc")}
    assert hosts and {Path(cmd[cmd.index("-c") + 1]).name for cmd in launchers} == hosts
    assert all(cmd[cmd.index("-x") + 1] == "xpu" for cmd in launchers)
    op_library = next(cmd for cmd in commands if cmd[:2] == ["g++", "-shared"] and "-lxpurt" in cmd)
    assert any(arg.endswith(".device.bin.o") for arg in op_library)
    paddle_ops = next(cmd for cmd in commands if cmd[-3].endswith("paddle_ops.cc"))
    assert "-DFASTSPEC_WITH_XPU" in paddle_ops


def test_dry_run_prints_the_commands():
    result = subprocess.run(
        [sys.executable, "setup_ops.py", "--dry-run", "--bindings-only", "--cuda", "off"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "FASTSPEC_MARCH": ""},
    )
    lines = result.stdout.splitlines()
    assert any(line.startswith("g++ ") and "find_token.cc" in line for line in lines)
    assert lines[-1].startswith("g++ -shared")
    assert "-march" not in result.stdout


def test_the_sanitized_bindings_are_a_separate_build(setup_ops, monkeypatch):
    """--bindings-only --sanitize: every compile and the link carry ASan + UBSan (every report
    fatal), no CUDA, and the library goes to build/sanitize/ (where fastspec.arrays looks for it
    under FASTSPEC_KERNELS_LIB=sanitize), never over fastspec/_lib."""
    from fastspec import arrays

    monkeypatch.delenv("FASTSPEC_MARCH", raising=False)
    commands = setup_ops.planned_commands(["--bindings-only", "--sanitize"])
    flags = {"-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g", "-O1"}
    sources = compiles(commands)
    assert sources and all(flags <= set(cmd) and "-O3" not in cmd for cmd in sources)
    # no CUDA: no nvcc, and the .cu files only as the host emulation compiles them (uninstrumented here)
    assert not any("nvcc" in cmd[0] for cmd in commands)
    assert all(
        "-DFASTSPEC_CUDA_EMULATION" in cmd and "-fsanitize=thread" not in cmd
        for cmd in commands
        if "-DFASTSPEC_WITH_CUDA" in cmd or ("-c" in cmd and Path(cmd[cmd.index("-c") + 1]).suffix == ".cu")
    )
    [link] = [cmd for cmd in commands if cmd[:2] == ["g++", "-shared"]]
    assert "-fsanitize=address,undefined" in link
    output = Path(link[link.index("-o") + 1])
    assert output.parent == setup_ops.SANITIZE_LIB_DIR == arrays.SANITIZE_LIB_DIR
    assert output.name.startswith("fastspec_kernels")
    normal = setup_ops.planned_commands(["--bindings-only", "--cuda", "off"])
    objects = lambda cmds: {cmd[cmd.index("-o") + 1] for cmd in cmds}  # noqa: E731
    assert not objects(sources) & objects(compiles(normal))  # cached apart: the flags are in the key
    with pytest.raises(SystemExit, match="--bindings-only"):
        setup_ops.planned_commands(["--sanitize"])


# Run in a fresh process (FASTSPEC_SIMD is read once): the level the kernels chose, then
# the CPU kernels against the numpy reference on rows and token runs long enough for the
# SIMD loops (near-flat rows included). Prints the level.
KERNEL_CHECK = r"""
import ctypes
import numpy as np
from fastspec import arrays
from fastspec import reference as ref
from bench.workloads import ngram_inputs
from tests.helpers.ngram_cases import ARRAY_NAMES

print(ctypes.CDLL(arrays.module().__file__).fastspec_simd_level())
rng = np.random.default_rng(7)
vocab, rows = 20000, 6
peaked = np.exp(rng.normal(0, 5, (rows // 2, vocab)))
flat = 1.0 + 0.01 * rng.random((rows - rows // 2, vocab))
p32 = np.concatenate([peaked, flat]).astype(np.float32)
p32 /= p32.sum(axis=1, keepdims=True)
top_p = np.array([0.9, 0.5, 1.0, 0.95, 0.7, 0.99], np.float32)
top_k = np.array([0, 40, 0, 0, 3000, 0], np.int32)
seed = np.arange(rows, dtype=np.int64) * 977 + 5
step = np.arange(rows, dtype=np.int64)
bid = np.arange(rows, dtype=np.int32)
cu = np.arange(rows + 1, dtype=np.int32)
for probs in (p32, (p32.view(np.uint32) >> 16).astype(np.uint16), p32.astype(np.float16)):
    ids, scores, lens = np.empty((rows, 16), np.int64), np.empty((rows, 16), np.float32), np.empty(rows, np.int32)
    arrays.top_p_candidates(
        probs, top_p, bid, candidate_ids=ids, candidate_scores=scores, candidate_lens=lens, max_candidate_len=16
    )
    want = ref.top_p_candidates(probs, top_p, bid, max_candidate_len=16)
    for got, exp in zip((ids, scores, lens), want):
        assert np.array_equal(got.view(np.uint8), np.ascontiguousarray(exp).view(np.uint8)), probs.dtype
    tokens = np.empty(rows, np.int64)
    arrays.sample_tokens(probs, top_p, top_k, seed, step, bid, cu, tokens=tokens)
    assert np.array_equal(tokens, ref.sample_tokens(probs, top_p, top_k, seed, step, bid, cu)), probs.dtype
for kind in ("nomatch", "text"):
    a = ngram_inputs(kind, 4, 3000)
    drafts, lens = ref.ngram_match(*(a[n].copy() for n in ARRAY_NAMES), max_ngram_size=5)
    arrays.ngram_match(*(a[n] for n in ARRAY_NAMES), max_ngram_size=5)
    assert np.array_equal(a["draft_tokens"], drafts) and np.array_equal(a["seq_lens_this_time"], lens), kind
"""


@pytest.mark.parametrize("simd", ["off", "avx2", ""])
def test_simd_paths_match_the_reference(setup_ops, simd):
    env = {**os.environ, "FASTSPEC_SIMD": simd}
    result = subprocess.run([sys.executable, "-c", KERNEL_CHECK], cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    level = int(result.stdout.split()[0])
    host = LEVELS.get(setup_ops.host_simd_level())
    if simd == "off":
        assert level == 0
    elif host is not None:  # Linux: /proc/cpuinfo tells what the CPU has
        assert level == (min(host, 1) if simd == "avx2" else host)


def test_every_dispatch_glue_file_is_compiled(setup_ops):
    """custom_ops/dispatch/ (each op's OpCall glue and its registrations) goes into the library."""
    sources = {Path(cmd[cmd.index("-c") + 1]) for cmd in setup_ops.planned_commands(["--cuda", "off"]) if "-c" in cmd}
    glue = set((ROOT / "custom_ops" / "dispatch").glob("*.cc"))
    assert glue and glue <= {s.resolve() for s in sources}

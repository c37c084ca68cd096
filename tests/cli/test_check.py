"""`python -m fastspec check` / `fastspec.cli.check.run_check()`: passes on this build, fails on a planted
wrong result (and on a kernel that raises), naming the op and the backend."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from fastspec import arrays
from fastspec.cli import check, main
from fastspec.cli.cases import cases
from tests.helpers.paths import ROOT

ROWS = [c.name for c in cases()]


@pytest.mark.slow
def test_check_passes_here():
    proc = subprocess.run(
        [sys.executable, "-m", "fastspec", "check"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    header = next(line for line in lines if line.lstrip().startswith("cpu "))
    columns = header.split("  ")
    assert "xpu emu" in header and "cuda emu" in header and "paddle cpu" in header
    for row in ROWS:
        line = next(line for line in lines if line.startswith(row + "  "))
        assert "FAIL" not in line and line[len(row) :].split()[0] == "PASS", line  # the picked CPU level comes first
    assert "0 failed" in lines[-1] and "all good" in lines[-1], columns


def test_every_op_is_checked():
    from fastspec.core.schema import SCHEMAS, STRATEGIES

    assert {c.op for c in cases()} == set(SCHEMAS)
    assert {c.attrs["strategy"] for c in cases() if c.op == "verify_draft_tokens"} == set(STRATEGIES)
    assert set(STRATEGIES) >= {"topp", "greedy", "target_match", "rejection", "block"}


def test_every_cpu_level_this_cpu_has_runs():
    build = arrays.module().build_info()
    report = check.check(only=("cpu",))
    for level in build["simd_compiled"]:
        expected = "PASS" if check.LEVELS.index(level) <= check.LEVELS.index(build["simd_cpu"]) else "no CPU"
        assert {report.cells[row, f"cpu {level}"] for row in ROWS} == {expected}
    assert report.columns[0] == f"cpu {build['simd_picked']}"


def test_a_planted_wrong_result_fails_on_that_backend_only(monkeypatch, capsys):
    right = arrays.top_p_candidates

    def wrong_on_the_xpu(*args, **kwargs):
        result = right(*args, **kwargs)
        if kwargs.get("backend") == "xpu_emulator":
            result.candidate_ids[1, 0] += 1
        return result

    monkeypatch.setattr(arrays, "top_p_candidates", wrong_on_the_xpu)
    report = check.check(only=("cpu", "xpu"))
    failed = {key for key, cell in report.cells.items() if cell == "FAIL"}
    assert failed == {("top_p_candidates", "xpu emu")}
    assert not report.ok
    row_1 = next(c for c in cases() if c.op == "top_p_candidates").attrs["max_candidate_len"]  # [1, 0], flat
    assert any(n.startswith(f"FAIL top_p_candidates on xpu emu: candidate_ids[{row_1}] is") for n in report.notes)

    assert main(["check", "--only", "xpu"]) == 1
    out = capsys.readouterr().out
    assert "1 failed" in out and "FAILED" in out
    assert check.run_check(verbose=False) is False


def test_every_op_passes_on_the_cuda_emulator_and_a_wrong_result_fails_there(monkeypatch):
    report = check.check(only=("cuda",))
    assert report.columns[0] == "cuda emu"
    assert {report.cells[row, "cuda emu"] for row in ROWS} == {"PASS"}
    right = arrays.sample_tokens

    def wrong_on_the_emulator(*args, **kwargs):
        tokens = right(*args, **kwargs)
        if kwargs.get("backend") == "cuda_emulator":
            tokens[0] += 1
        return tokens

    monkeypatch.setattr(arrays, "sample_tokens", wrong_on_the_emulator)
    report = check.check(only=("cpu", "cuda"))
    assert {key for key, cell in report.cells.items() if cell == "FAIL"} == {("sample_tokens", "cuda emu")}
    assert any(n.startswith("FAIL sample_tokens on cuda emu: ") for n in report.notes)


def test_a_wrong_paddle_result_fails_the_paddle_column(monkeypatch):
    import fastspec.ops

    right = fastspec.ops.sample_tokens
    monkeypatch.setattr(fastspec.ops, "sample_tokens", lambda *a, **k: right(*a, **k) * 0 + 1)
    report = check.check(only=("paddle",))
    assert report.cells["sample_tokens", "paddle cpu"] == "FAIL"
    assert [cell for (row, _), cell in report.cells.items() if row != "sample_tokens"] == ["PASS"] * (len(ROWS) - 1)


def test_a_kernel_that_raises_is_a_failed_cell(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("update_model_status: the cpu kernel failed: -1")

    monkeypatch.setattr(arrays, "update_model_status", broken)
    report = check.check(only=("xpu",))
    assert report.cells["update_model_status", "xpu emu"] == "FAIL"
    assert (
        "FAIL update_model_status on xpu emu: raised RuntimeError: update_model_status: the cpu kernel failed"
        in "\n".join(report.notes)
    )


def test_mismatch_finds_a_flipped_bit():
    case = next(c for c in cases() if c.name == "top_k_top_p_probs")
    (want,) = case.reference(case.arrays, case.attrs)
    assert check.mismatch(case, (want,)) is None
    off = want.copy()
    row, col = 2, want.shape[1] - 1
    off.view(np.uint32)[row, col] ^= 1  # one ulp
    assert check.mismatch(case, (off,)).startswith(f"target_probs[{row * want.shape[1] + col}] is")


def test_run_check_passes_here():
    assert check.run_check(verbose=False) is True


@pytest.mark.parametrize("argv", [["check", "--only", "gpu"], ["check", "--seed", "-1"], ["nothing"]])
def test_bad_arguments_are_one_line(capsys, argv):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.splitlines()[-1].startswith("fastspec")

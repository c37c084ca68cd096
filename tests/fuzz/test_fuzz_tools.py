"""The fuzzer's own parts: cases replay from their seed, survive JSON, adversarial values keep a
call well-formed, broken calls are refused, the checks catch a wrong answer, and the supervisor
turns a dying worker into a finding and resumes after it."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

import fastspec.arrays
from fastspec.core.errors import FastspecBuildError
from fastspec.core.examples import example_call
from tests.fuzz import sanitizer
from tests.fuzz.campaign import EXAMPLE_EVERY, case_rng, make_case
from tests.fuzz.case import Case, from_json, is_strided, strided_view, to_json
from tests.fuzz.check import run_case, same_bits
from tests.fuzz.malform import malform
from tests.fuzz.reports import report_summary
from tests.fuzz.targets import TARGETS
from tests.fuzz.values import adversarial, case_dims
from tests.helpers.paths import ROOT
from tests.helpers.python_module import run_module


def well_formed_cases(target: str, seed: int, count: int) -> Iterator[Case]:
    """The campaign's first ``count`` cases of ``target`` from ``seed``, the malformed ones left out."""
    return (case for case in (make_case(target, seed, i) for i in range(count)) if not case.malformed)


def same_case(a: Case, b: Case) -> bool:
    return json.dumps(to_json(a)) == json.dumps(to_json(b))


@pytest.mark.parametrize("target", list(TARGETS))
def test_a_case_is_a_function_of_target_seed_and_index(target):
    assert same_case(make_case(target, 5, 17), make_case(target, 5, 17))
    assert not same_case(make_case(target, 5, 17), make_case(target, 5, 18))
    assert not same_case(make_case(target, 5, 17), make_case(target, 6, 17))


def test_json_keeps_every_bit():
    nan_payload = np.array([0x7FC00001, 0xFFFFFFFF, 0x80000000], np.uint32).view(np.float32)
    case = Case(
        "verify_draft_tokens[rejection]",
        {
            "target_probs": nan_payload.reshape(1, 3),
            "draft_probs": np.array([[0x7E01, 0x8000, 0x0001]], np.uint16).view(np.float16),
            "seed": np.array([-(2**63), 2**63 - 1], np.int64),
            "stop_flags": np.array([True, False]),
            "accept_tokens": strided_view(np.arange(6, dtype=np.int64).reshape(3, 2)),
            "end_tokens": [1, 2],
            "reasoning_status": None,
        },
        {"strategy": "rejection"},
        {"backend": "xpu_emulator", "xpu_grid": (3, 16)},
        "list end_tokens",
    )
    back = from_json(json.loads(json.dumps(to_json(case))))
    for name, value in case.arrays.items():
        got = back.arrays[name]
        if isinstance(value, np.ndarray):
            assert got.dtype == value.dtype and got.shape == value.shape
            assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(value).tobytes()
            assert is_strided(got) == is_strided(value)
        else:
            assert got == value
    assert back.options["xpu_grid"] == (3, 16) and back.malformed == case.malformed


EXAMPLE_TARGETS = [t for t in TARGETS if "[" not in t or t.endswith("[greedy]")]  # the examples verify GREEDY


@pytest.mark.parametrize("target", EXAMPLE_TARGETS)
def test_the_example_call_seeds_every_sixteenth_case(target):
    """Each such case is the op's example call with 1..8 of its slots (before any value is poked), and runs clean."""
    op, checked = TARGETS[target].op, 0
    for index in range(0, 8 * EXAMPLE_EVERY, EXAMPLE_EVERY):
        case = make_case(target, 7, index)
        slots_seed = int(case_rng(target, 7, index).integers(0, 2**31))
        expected, attrs = example_call(op, batch=1 + index // EXAMPLE_EVERY, seed=slots_seed)
        if case.malformed or "adversarial" in case.origin:
            continue
        assert case.attrs == attrs
        for name, value in expected.items():
            got = case.arrays[name]
            assert (got is None) == (value is None), name
            if value is not None:
                np.testing.assert_array_equal(np.asarray(got).reshape(np.shape(value)), value, err_msg=name)
        assert run_case(case).kind == "ok", case.origin
        checked += 1
    assert checked >= 2


@pytest.mark.parametrize("target", list(TARGETS))
def test_adversarial_values_keep_the_call_well_formed(target):
    rng = np.random.default_rng(3)
    for case in well_formed_cases(target, 9, 20):
        before = case_dims(case)
        poked = adversarial(rng, case)
        assert poked and case_dims(case) == before


@pytest.mark.parametrize("target", list(TARGETS))
def test_every_break_is_refused(target):
    rng = np.random.default_rng(4)
    for case in well_formed_cases(target, 11, 30):
        case.malformed = malform(rng, case)
        outcome = run_case(case)
        assert outcome.kind == "rejected", f"{case.malformed}: {outcome}"


def _well_formed(target: str) -> Case:
    return next(
        c for c in (make_case(target, 2, i) for i in range(100)) if not c.malformed and c.options.get("backend") is None
    )


def test_a_wrong_answer_is_a_mismatch(monkeypatch):
    target = TARGETS["update_model_status"]
    case = _well_formed(target.name)
    assert run_case(case).kind == "ok"

    def off_by_one(arrays, attrs):
        expected = target.reference(arrays, attrs)
        expected["step_idx"] = expected["step_idx"] + 1
        return expected

    monkeypatch.setitem(TARGETS, target.name, dataclasses.replace(target, reference=off_by_one))
    outcome = run_case(case)
    assert outcome.finding == "mismatch" and "step_idx" in outcome.detail


def test_a_broken_call_that_runs_is_a_finding():
    case = _well_formed("sample_tokens")
    case.malformed = "claimed broken"  # the call is fine, so the op runs it
    outcome = run_case(case)
    assert outcome.finding == "accepted a malformed call"


def test_an_unknown_library_choice_is_an_error(monkeypatch):
    monkeypatch.setenv(fastspec.arrays.KERNELS_LIB_ENV, "asan")
    with pytest.raises(FastspecBuildError, match=fastspec.arrays.KERNELS_LIB_ENV):
        fastspec.arrays.module.__wrapped__()


def test_the_sanitizer_environment_preloads_the_runtimes():
    env = sanitizer.environment({"LD_PRELOAD": "/other.so", "ASAN_OPTIONS": "verbosity=1"})
    preload = env["LD_PRELOAD"].split(":")
    assert "libasan" in Path(preload[0]).name and "libubsan" in Path(preload[1]).name and preload[2] == "/other.so"
    assert all(Path(p).exists() for p in preload[:2])
    assert {"detect_leaks=0", "abort_on_error=1", "verbosity=1"} <= set(env["ASAN_OPTIONS"].split(":"))
    assert {"halt_on_error=1", "print_stacktrace=0"} <= set(env["UBSAN_OPTIONS"].split(":"))
    assert "print_stacktrace=1" in sanitizer.environment({}, stacks=True)["UBSAN_OPTIONS"].split(":")
    assert env[fastspec.arrays.KERNELS_LIB_ENV] == "sanitize"


def test_a_worker_that_dies_is_a_finding_and_the_campaign_resumes(tmp_path):
    """A worker aborting (as a sanitizer report makes it) before case 2 of 6: the supervisor names
    that case, saves it, runs the other five, and exits 1."""
    result = run_module(
        "tests.fuzz",
        "--cases",
        "6",
        "--targets",
        "update_model_status",
        "--no-corpus",
        "--abort-at",
        "2",
        "--jobs",
        "1",
        "--out",
        str(tmp_path),
    )
    assert result.returncode == 1, result.stdout + result.stderr
    summary = json.loads((tmp_path / "last_run.json").read_text())
    [finding] = summary["findings"]
    assert finding["kind"].startswith("crash") and finding["index"] == 2
    assert "--replay 'update_model_status:1:2'" in finding["replay"]
    assert (tmp_path / "findings" / "update_model_status-1-2.json").exists()
    totals = summary["totals"]["update_model_status"]
    assert totals["cases"] == 6 and totals["crashes"] == 1
    assert totals["ok"] + totals["rejected"] == 5


def test_a_sanitizer_report_is_summarised_by_its_place_and_kind():
    ubsan = (
        "noise\n/x/y/custom_ops/cpu/ngram_match.cc:60:20: runtime error: signed integer overflow: "
        "5 + 9223372036854775807 cannot be represented in type 'long int'\n"
        "    #0 0x7f in fastspec::ngram_run_cpu(...) /x/y/custom_ops/cpu/ngram_match.cc:60\n"
    )
    asan = (
        "==1==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x60c0 at pc 0x7f\n"
        "    #0 0x7f2 in scan_region /x/y/custom_ops/cpu/ngram_match.cc:21\n"
        "    #1 0x7f3 in search_slot /x/y/custom_ops/cpu/ngram_match.cc:40\n"
    )
    signature, excerpt = report_summary(ubsan)
    assert signature == "custom_ops/cpu/ngram_match.cc:60:20: signed integer overflow"
    assert "#0" in excerpt and "noise" not in excerpt
    signature, excerpt = report_summary(asan)
    assert signature == "scan_region custom_ops/cpu/ngram_match.cc:21: AddressSanitizer: heap-buffer-overflow"
    assert "#1" in excerpt
    assert report_summary("Traceback ...\nValueError: boom\n")[0] == "ValueError: boom"


def test_a_terminated_campaign_leaves_its_figures_and_no_worker(tmp_path):
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.fuzz",
            "--cases",
            "100000",
            "--targets",
            "update_model_status",
            "--no-corpus",
            "--jobs",
            "1",
            "--progress-seconds",
            "1",
            "--out",
            str(tmp_path),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    for line in process.stdout:  # the first progress line: cases are running
        if line.startswith("[fuzz] ") and "/s" in line:
            break
    process.terminate()
    output = process.communicate(timeout=60)[0]
    assert process.returncode == 130, output
    assert "interrupted" in output and "update_model_status" in output
    summary = json.loads((tmp_path / "last_run.json").read_text())
    assert summary["complete"] is False and summary["totals"]["update_model_status"]["cases"] > 0
    workers = subprocess.run(["pgrep", "-f", f"tests.fuzz.worker --state {tmp_path}"], capture_output=True, text=True)
    assert workers.stdout.strip() == ""


def test_any_nan_lets_a_nan_match_a_nan_of_other_bits_and_nothing_else():
    want = np.array([1.0, np.nan, -0.0], np.float32)
    other_nan = want.copy()
    other_nan.view(np.uint32)[1] = 0xFFC00001  # a negative NaN with another payload
    assert not same_bits(other_nan, want) and same_bits(other_nan, want, any_nan=True)
    for wrong in ([1.0, 2.0, -0.0], [np.nan, np.nan, -0.0], [1.0, np.nan, 0.0]):  # a NaN lost or made; -0 vs +0
        assert not same_bits(np.array(wrong, np.float32), want, any_nan=True)
    assert same_bits(want.copy(), want) and not same_bits(want.astype(np.float64), want, any_nan=True)

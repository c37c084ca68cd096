"""`python -m fastspec.demo --structured-output json --short`: every output validates against the schema,
spec on equals spec off, grammar drafts raise the accepted length."""

import json

import pytest

pytest.importorskip("llguidance")
pytest.importorskip("jsonschema")

from tests.helpers.python_module import run_module


def test_structured_output_demo(tmp_path):
    out = tmp_path / "demo"
    proc = run_module("fastspec.demo", "--structured-output", "json", "--short", "--requests", "6", "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "6/6 outputs parse and validate" in proc.stdout and "PASS" in proc.stdout
    summary = json.loads((out / "structured_output.json").read_text())
    assert summary["all_valid"] and summary["identical_to_spec_off"]
    lengths = summary["accepted_length"]
    assert lengths["grammar_drafts"] > lengths["no_grammar_drafts"] > 1.0
    assert summary["steps"]["grammar_drafts"] < summary["steps"]["no_grammar_drafts"] < summary["steps"]["spec_off"]


def test_structured_output_needs_speculation(tmp_path):
    proc = run_module(
        "fastspec.demo", "--structured-output", "json", "--method", "none", "--out", str(tmp_path), timeout=120
    )
    assert proc.returncode == 2 and "drafts nothing" in proc.stderr

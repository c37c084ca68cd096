"""The demo's adaptive column (``python -m fastspec.demo --short``) and ``--no-adaptive``."""

import json

from fastspec.demo import cli


def test_short_demo_runs_adaptive_beside_fixed_k(tmp_path, capsys):
    assert cli.main(["--short", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "fixed K = 5" in out and "adaptive: PASS" in out
    summary = json.loads((tmp_path / "summary.json").read_text())
    adaptive, off = summary["adaptive"], summary["spec_off"]
    assert adaptive["generated_tokens"] == off["generated_tokens"] > 0
    assert adaptive["steps"] < off["steps"]  # drafts are cheap on this machine: the controller keeps them


def test_no_adaptive_skips_the_run(tmp_path, capsys):
    assert cli.main(["--short", "--no-adaptive", "--no-plot", "--out", str(tmp_path)]) == 0
    assert "fixed K" not in capsys.readouterr().out
    assert json.loads((tmp_path / "summary.json").read_text())["adaptive"] is None

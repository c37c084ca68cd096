"""The README's main command, in its short CI mode: `python -m fastspec.demo --short`."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_demo_short_mode(tmp_path):
    out = tmp_path / "demo"
    proc = subprocess.run(
        [sys.executable, "-m", "fastspec.demo", "--short", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "lossless check" in proc.stdout and "PASS" in proc.stdout
    assert "mean accepted length" in proc.stdout
    assert "16/16" not in proc.stderr and "2/2 requests" in proc.stderr  # the progress bar ran
    summary = json.loads((out / "summary.json").read_text())
    assert summary["lossless"] == "PASS"
    on, off = summary["spec_on"], summary["spec_off"]
    assert on["generated_tokens"] == off["generated_tokens"] > 0
    assert on["mean_accepted_length"] > 1.5
    assert summary["steps_saved"] == off["steps"] - on["steps"] > 0
    assert set(summary["by_ngram_size"]) == {"1", "3"}
    png = (out / "acceptance.png").read_bytes()
    assert png.startswith(b"\x89PNG")


def test_demo_spec_off_method(tmp_path):
    """--method none runs the baseline twice (no drafts, no plot) and still exits cleanly."""
    from fastspec.demo import cli

    assert cli.main(["--short", "--method", "none", "--out", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["spec_on"]["proposed_tokens"] == 0

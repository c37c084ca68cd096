"""The README's main job with method mtp (configs/mtp.yaml): `python -m fastspec.demo --method mtp`.

On the fixed builtin corpus (fastspec/demo/data/), like tests/test_demo.py.
"""

import json

from fastspec.demo import cli


def test_demo_method_mtp_short(tmp_path, capsys):
    assert cli.main(["--short", "--corpus", "builtin", "--method", "mtp", "--no-plot", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "method mtp" in out and "PASS" in out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["config"]["method"] == "mtp" and summary["config"]["num_model_steps"] == 3
    assert summary["lossless"] == "PASS"
    assert summary["spec_on"]["mean_accepted_length"] > 2.0
    assert summary["spec_on"]["generated_tokens"] == summary["spec_off"]["generated_tokens"]


def test_demo_method_mtp_rejection_short(tmp_path):
    assert cli.main(["--short", "--corpus", "builtin", "--method", "mtp", "--strategy", "rejection", "--no-plot",
                     "--out", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["spec_on"]["mean_accepted_length"] > 1.5

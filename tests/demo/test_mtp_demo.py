"""The README's main job with methods mtp and eagle3 (configs/mtp.yaml, configs/eagle3.yaml).

On the fixed builtin corpus (fastspec/demo/data/), like tests/demo/test_demo.py.
"""

import json

import pytest

from fastspec.demo import cli


def short_demo(out, method: str, *flags: str) -> int:
    """The demo's exit status, --short on the builtin corpus with ``method``, writing under ``out``."""
    return cli.main(["--short", "--corpus", "builtin", "--method", method, *flags, "--no-plot", "--out", str(out)])


def test_demo_method_mtp_short(tmp_path, capsys):
    assert short_demo(tmp_path, "mtp") == 0
    out = capsys.readouterr().out
    assert "method mtp" in out and "PASS" in out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["config"]["method"] == "mtp" and summary["config"]["num_model_steps"] == 3
    assert summary["lossless"] == "PASS"
    assert summary["spec_on"]["mean_accepted_length"] > 2.0
    assert summary["spec_on"]["generated_tokens"] == summary["spec_off"]["generated_tokens"]


def test_demo_method_mtp_rejection_short(tmp_path):
    assert short_demo(tmp_path, "mtp", "--strategy", "rejection") == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["spec_on"]["mean_accepted_length"] > 1.5


@pytest.mark.slow
def test_demo_method_eagle3_with_the_static_step(tmp_path, capsys):
    """The README's eagle3 command: the demo's target exposes its aux states through the mixin."""
    assert short_demo(tmp_path, "eagle3", "--static-step") == 0
    out = capsys.readouterr().out
    assert "method eagle3" in out and "aux layers [1, 2, 4]" in out and "PASS" in out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["config"]["aux_layer_ids"] == [1, 2, 4]
    assert summary["spec_on"]["program_builds"] == {"prepare": 1, "finish": 1}
    assert summary["spec_on"]["mean_accepted_length"] > 2.0
    assert summary["spec_on"]["generated_tokens"] == summary["spec_off"]["generated_tokens"]

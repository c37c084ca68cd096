"""The README's main command, in its short CI mode: `python -m fastspec.demo --short`.

The demo tests run on the fixed builtin corpus (fastspec/demo/data/), so editing the project's
other files does not change what they check.
"""

import json

import numpy as np
import pytest

from tests.helpers.paths import ROOT
from tests.helpers.python_module import run_module


@pytest.mark.slow
def test_demo_short_mode(tmp_path):
    out = tmp_path / "demo"
    proc = run_module("fastspec.demo", "--short", "--out", str(out))  # --short picks the builtin corpus
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "lossless check" in proc.stdout and "PASS" in proc.stdout
    assert "mean accepted length" in proc.stdout
    assert "16/16" not in proc.stderr and "2/2 requests" in proc.stderr  # the progress bar ran
    summary = json.loads((out / "summary.json").read_text())
    assert summary["workload"]["corpus"] == "builtin"
    assert all(s.startswith("fastspec/demo/data/") for s in summary["workload"]["sources"])
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

    assert cli.main(["--short", "--corpus", "builtin", "--method", "none", "--out", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["spec_on"]["proposed_tokens"] == 0


@pytest.mark.parametrize("method", ["mtp", "eagle3", "suffix"])
def test_demo_tree_shows_chain_against_tree(tmp_path, capsys, method):
    """--tree runs the drafter's chain and its trees; both lossless, the tree longer per step."""
    from fastspec.demo import cli

    assert cli.main(["--short", "--tree", "--method", method, "--no-plot", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "tree (top-2, 8 nodes)" in printed and "tree: PASS" in printed
    summary = json.loads((tmp_path / "summary.json").read_text())
    chain, tree = summary["spec_on"], summary["tree"]
    assert summary["lossless"] == "PASS" and summary["adaptive"] is None
    assert tree["generated_tokens"] == chain["generated_tokens"] > 0
    if method == "suffix":  # the short run's two requests rarely branch: the tree matches its chain there
        assert tree["mean_accepted_length"] >= chain["mean_accepted_length"]
    else:
        assert tree["mean_accepted_length"] > chain["mean_accepted_length"]


def test_demo_repeats_alternate_and_report_the_median_run(tmp_path, capsys):
    """--repeats N: N timed runs of each, the table's the one of median wall time, every repeat the same tokens."""
    from fastspec.demo import cli

    args = ["--short", "--repeats", "3", "--no-plot", "--no-adaptive", "--ngram-sizes", "1", "--out", str(tmp_path)]
    assert cli.main(args) == 0
    printed = capsys.readouterr()
    assert "spec off (3/3)" in printed.err and "spec on (ngram) (2/3)" in printed.err
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["lossless"] == "PASS"
    for mode in ("spec_off", "spec_on"):
        times = summary["wall_times_s"][mode]
        assert len(times) == 3 and summary[mode]["wall_time_s"] == sorted(times)[1]


def test_median_run_and_repeats_agree():
    from types import SimpleNamespace

    from fastspec.demo.cli import median_run, repeats_agree

    run = lambda wall, outputs: SimpleNamespace(stats=SimpleNamespace(wall_time=wall), outputs=outputs)  # noqa: E731
    same = [np.array([1, 2]), np.array([3])]
    runs = [run(0.9, same), run(0.2, same), run(0.5, same), run(0.7, same)]
    assert median_run(runs).stats.wall_time == 0.5 and median_run(runs[:1]) is runs[0]
    assert repeats_agree(runs)
    assert not repeats_agree(runs + [run(0.1, [np.array([1, 2]), np.array([4])])])
    assert not repeats_agree(runs + [run(0.1, same[:1])])


def test_demo_tree_needs_a_tree_drafter(capsys):
    from fastspec.demo import cli

    assert cli.main(["--short", "--tree", "--method", "ngram"]) == 2
    assert "--tree needs a tree drafter: --method mtp, eagle3, suffix, got --method ngram" in capsys.readouterr().err


def test_builtin_workload_is_fixed_and_reads_only_its_corpus():
    from fastspec.demo.workload import DATA, copy_edit_workload

    a = copy_edit_workload(4, 60, seed=3, corpus="builtin")
    b = copy_edit_workload(4, 60, seed=3, corpus="builtin")
    assert a.prompts == b.prompts and a.references == b.references and a.sources == b.sources
    assert all((ROOT / s.rsplit(":", 1)[0]).parent == DATA for s in a.sources)
    for prompt, reference in zip(a.prompts, a.references.values()):
        assert len(reference) > 30 and set(reference) <= set(prompt)  # a rewrite: small edits of the chunk


def test_unknown_corpus_is_rejected():
    from fastspec.demo.workload import copy_edit_workload

    with pytest.raises(ValueError, match="corpus"):
        copy_edit_workload(1, 60, corpus="elsewhere")


def test_demo_stream_serves_and_prints_tokens_as_they_come(tmp_path, capsys):
    """--stream: the requests through a SpecEngine, one line per request and step, checked against spec off."""
    from fastspec.demo import cli

    assert cli.main(["--short", "--stream", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if "] request " in line]
    assert any(" +" in line for line in lines) and sum("done (" in line for line in lines) == 2
    assert "lossless check: PASS (2/2 streamed outputs identical to spec off)" in out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["lossless"] == "PASS" and summary["stream"]["identical_to_spec_off"] == 2


def test_demo_penalties_stay_lossless(tmp_path):
    """--repetition-penalty, --presence-penalty and --frequency-penalty reach every request, and spec on
    still emits spec off's tokens (the lossless check); they change what is written."""
    from fastspec.demo import cli

    base = ["--short", "--corpus", "builtin", "--no-plot", "--no-adaptive", "--temperature", "0"]
    assert cli.main([*base, "--out", str(tmp_path / "plain")]) == 0
    assert (
        cli.main(
            [
                *base,
                "--repetition-penalty",
                "1.3",
                "--presence-penalty",
                "0.2",
                "--frequency-penalty",
                "0.1",
                "--out",
                str(tmp_path / "penalised"),
            ]
        )
        == 0
    )
    plain, penalised = (json.loads((tmp_path / d / "summary.json").read_text()) for d in ("plain", "penalised"))
    assert penalised["lossless"] == "PASS"
    assert penalised["config"]["sampling"]["repetition_penalty"] == 1.3
    counts = ("generated_tokens", "accepted_tokens", "proposed_tokens")  # the penalties change the text drafted against
    assert [penalised["spec_on"][c] for c in counts] != [plain["spec_on"][c] for c in counts]


def test_demo_logprobs_are_printed_and_checked_against_spec_off(tmp_path, capsys):
    """--logprobs N: the first request's first tokens with their log-probabilities and N best, and the
    lossless check holds the logprobs too (a changed one fails it)."""
    import dataclasses

    from fastspec.demo import cli

    args = ["--short", "--corpus", "builtin", "--no-plot", "--no-adaptive", "--temperature", "0", "--logprobs", "2"]
    assert cli.main([*args, "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "PASS: 2/2 outputs identical to spec off and their logprobs" in out
    lines = out[out.index("logprobs of request 0") :].splitlines()[1:5]
    assert len(lines) == 4 and all(line.count("|") == 1 and line.count(",") == 1 for line in lines)
    assert json.loads((tmp_path / "summary.json").read_text())["config"]["sampling"]["logprobs"] == 2

    from fastspec.runtime.generation import GenerationResult

    same = GenerationResult([np.array([5, 6])], None, [[(-0.5, [(5, -0.5)]), (-0.25, [(6, -0.25)])]])
    changed = dataclasses.replace(same, logprobs=[[(-0.5, [(5, -0.5)]), (-0.2500001, [(6, -0.2500001)])]])
    assert cli.lossless_check(same, same, "greedy")[0] == "PASS"
    assert cli.lossless_check(same, changed, "greedy") == (
        "FAIL",
        "FAIL: 1/1 outputs identical to spec off, logprobs DIFFER",
    )

"""One-line user errors on every fastspec command line: exit status 2, `<prog>: error: ...`
naming the argument, no traceback (unless --debug); the argparse types check ranges."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys

import pytest

from fastspec.cli import errors
from fastspec.cli.errors import UserError
from fastspec.demo import cli as demo
from tests.helpers.paths import ROOT

BENCHES = sorted(p.stem for p in (ROOT / "bench").glob("bench_*.py"))


def one_error_line(err: str, prog: str) -> str:
    """The error line of stderr; fails on a traceback or a message that is not one line."""
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1 and lines[0].startswith(f"{prog}: error: "), err
    return lines[0]


@pytest.fixture
def bad_files(tmp_path):
    files = {
        "syntax": "method: ngram\n  bad: [\n",
        "unknown": "method: ngram\nnum_speculative_tokens: 3\nfoo: 1\n",
        "value": "method: ngram\nnum_speculative_tokens: 3\nmax_candidate_len: 0\n",
        "list": "- 1\n- 2\n",
    }
    for name, text in files.items():
        (tmp_path / f"{name}.yaml").write_text(text)
    (tmp_path / "folder.yaml").mkdir()
    return tmp_path


# --- the demo ---------------------------------------------------------------------------------

PARSE_ERRORS = [  # (arguments, what the message must say): rejected by argparse, before any work
    (["--config", "missing.yaml"], "argument --config: no such file: 'missing.yaml'"),
    (["--k", "500"], "argument --k: must be an integer in [0, 64], got 500"),
    (["--k", "two"], "argument --k: must be an integer, got 'two'"),
    (["--strategy", "foo"], "argument --strategy: invalid choice: 'foo'"),
    (["--batch-size", "-5"], "argument --batch-size: must be an integer >= 1, got -5"),
    (["--batch-size", "0"], "argument --batch-size: must be an integer >= 1, got 0"),
    (["--requests", "0"], "argument --requests: must be an integer >= 1"),
    (["--top-p", "0"], "argument --top-p: must be a number in (0.0, 1.0]"),
    (["--top-p", "nan"], "argument --top-p: must be a number in (0.0, 1.0]"),
    (["--peak", "1"], "argument --peak: must be a number in (0.0, 1.0)"),
    (["--temperature", "-1"], "argument --temperature: must be a number >= 0.0"),
    (["--ngram-sizes", "1,0"], "argument --ngram-sizes: every item must be an integer >= 1, got 0"),
    (["--seed", "-1"], "argument --seed: must be an integer >= 0"),
    (["--method", "bogus"], "argument --method: invalid choice"),
]


@pytest.mark.parametrize("argv, message", PARSE_ERRORS, ids=[" ".join(a) for a, _ in PARSE_ERRORS])
def test_demo_rejects_bad_arguments_where_they_are_parsed(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        demo.parse_args(argv)
    assert exit_.value.code == 2
    assert message in one_error_line(capsys.readouterr().err, demo.PROG)


@pytest.mark.parametrize(
    "name, message",
    [
        ("syntax.yaml", "invalid YAML at line 2, column 6"),
        ("unknown.yaml", "unknown key 'foo'"),
        ("value.yaml", "max_candidate_len must be in [1, 1024], got 0"),
        ("list.yaml", "config must be a mapping, got list"),
    ],
)
def test_demo_names_the_config_file_and_what_is_wrong_in_it(capsys, bad_files, name, message):
    assert demo.main(["--config", str(bad_files / name), "--short"]) == 2
    line = one_error_line(capsys.readouterr().err, demo.PROG)
    assert f"--config {bad_files / name}" in line and message in line


def test_demo_config_that_is_a_folder(capsys, bad_files):
    with pytest.raises(SystemExit) as exit_:
        demo.parse_args(["--config", str(bad_files / "folder.yaml")])
    assert exit_.value.code == 2
    assert "argument --config: " in one_error_line(capsys.readouterr().err, demo.PROG)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--method", "ngram", "--k", "0"], "method 'ngram' needs num_speculative_tokens >= 1, got 0"),
        (["--strategy", "rejection"], "verify_strategy 'rejection' needs draft probabilities"),
        (["--strategy", "block"], "verify_strategy 'block' needs draft probabilities"),
    ],
)
def test_demo_flags_that_contradict_the_config(capsys, argv, message):
    assert demo.main([*argv, "--short"]) == 2
    line = one_error_line(capsys.readouterr().err, demo.PROG)
    assert "with the command-line options" in line and message in line


def test_demo_device_this_paddle_lacks(capsys):
    import paddle

    if paddle.is_compiled_with_cuda():
        pytest.skip("this Paddle has CUDA")
    assert demo.main(["--device", "gpu", "--short"]) == 2
    assert "--device gpu: not available in this Paddle build" in one_error_line(capsys.readouterr().err, demo.PROG)


def test_demo_out_that_is_a_file_is_named(capsys, tmp_path):
    (tmp_path / "taken").write_text("")
    argv = ["--short", "--no-adaptive", "--no-plot", "--ngram-sizes", "1", "--requests", "1", "--chunk-tokens", "20"]
    assert demo.main([*argv, "--out", str(tmp_path / "taken")]) == 2
    assert f"--out {tmp_path / 'taken'}: cannot create the folder" in one_error_line(capsys.readouterr().err, demo.PROG)


def test_debug_shows_the_traceback(bad_files):
    with pytest.raises(UserError, match="unknown key 'foo'"):
        demo.main(["--config", str(bad_files / "unknown.yaml"), "--short", "--debug"])


def test_demo_error_in_a_fresh_process_is_one_line_and_exit_2():
    proc = subprocess.run(
        [sys.executable, "-m", "fastspec.demo", "--batch-size", "0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "--batch-size" in one_error_line(proc.stderr, demo.PROG)


def test_internal_errors_keep_their_traceback():
    @errors.user_errors("prog")
    def broken(argv=None) -> int:
        raise KeyError("a bug")

    with pytest.raises(KeyError):
        broken([])


# --- the benchmarks -----------------------------------------------------------------------------

BENCH_ERRORS = {  # one bad value per script, checked where it is parsed
    "bench_adaptive": (["--batches", "1,0"], "argument --batches: every item must be an integer >= 1, got 0"),
    "bench_adaptive_controller": (["--batch", "4"], "unrecognized arguments: --batch 4"),
    "bench_call_overhead": (["--calls", "1001"], "argument --calls: must be an integer in [1, 1000], got 1001"),
    "bench_draft_tree": (["--depth", "7"], "argument --depth: must be an integer in [1, 6], got 7"),
    "bench_anchored_ngram": (["--pairs", "0"], "argument --pairs: must be an integer >= 1, got 0"),
    "bench_block_verify": (
        ["--workloads", "mtp-replay,beam"],
        "argument --workloads: must be a comma-separated list of",
    ),
    "bench_ngram_append": (["--workloads", "text,prose"], "argument --workloads: must be a comma-separated list of"),
    "bench_process_logits": (["--vocab", "1"], "argument --vocab: must be an integer >= 2, got 1"),
    "bench_ngram_match": (["--lens", "4096,x"], "argument --lens: every item must be an integer, got 'x'"),
    "bench_rejection_target": (["--k", "65"], "argument --k: must be an integer in [0, 64], got 65"),
    "bench_suffix": (["--requests", "0"], "argument --requests: must be an integer >= 1, got 0"),
    "bench_soak": (["--slots", "0"], "argument --slots: must be an integer in [1, 1024], got 0"),
    "bench_structured_output": (["--vocab", "10"], "argument --vocab: must be an integer in [300, 200000], got 10"),
    "bench_sampling": (["--rows", "-1"], "argument --rows: every item must be an integer >= 1, got -1"),
    "bench_verify_update": (["--calls", "0"], "argument --calls: must be an integer >= 1, got 0"),
}


def bench_main(name: str):
    sys.path.insert(0, str(ROOT))
    return importlib.import_module(f"bench.{name}").main


@pytest.mark.parametrize("name", BENCHES)
def test_every_benchmark_script_has_one_line_errors(capsys, monkeypatch, name):
    """A new script in bench/ is held to it too: user_errors on its main, --debug in its parser."""
    monkeypatch.setattr(sys, "argv", [f"{name}.py"])
    main = bench_main(name)
    assert getattr(main, "handles_user_errors", False), f"bench/{name}.py: decorate main with @user_errors()"
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0 and "--debug" in capsys.readouterr().out


@pytest.mark.parametrize("name", sorted(BENCH_ERRORS))
def test_benchmark_rejects_a_bad_value_in_one_line(capsys, monkeypatch, name):
    monkeypatch.setattr(sys, "argv", [f"{name}.py"])
    argv, message = BENCH_ERRORS[name]
    with pytest.raises(SystemExit) as exit_:
        bench_main(name)(argv)
    assert exit_.value.code == 2
    assert message in one_error_line(capsys.readouterr().err, f"{name}.py")


def test_benchmark_config_errors_are_user_errors(capsys, monkeypatch, bad_files):
    monkeypatch.setattr(sys, "argv", ["bench_adaptive.py"])
    assert bench_main("bench_adaptive")(["--config", str(bad_files / "unknown.yaml"), "--grid", "smoke"]) == 2
    assert "unknown key 'foo'" in one_error_line(capsys.readouterr().err, "bench_adaptive.py")


def test_benchmark_repo_that_is_not_a_git_repository(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "argv", ["bench_anchored_ngram.py"])
    assert bench_main("bench_anchored_ngram")(["--repo", str(tmp_path)]) == 2
    assert "not a git repository" in one_error_line(capsys.readouterr().err, "bench_anchored_ngram.py")


def test_benchmark_cuda_where_it_cannot_run(capsys, monkeypatch):
    from bench.common import device

    try:
        device("cuda")
        pytest.skip("CUDA benchmarks can run here")
    except argparse.ArgumentTypeError:
        pass
    monkeypatch.setattr(sys, "argv", ["bench_sampling.py"])
    with pytest.raises(SystemExit):
        bench_main("bench_sampling")(["--device", "cuda"])
    assert "argument --device: cuda: " in one_error_line(capsys.readouterr().err, "bench_sampling.py")


# --- the types ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "parse, text, value",
    [
        (errors.int_range(1), "3", 3),
        (errors.int_range(0, 64), "64", 64),
        (errors.int_range(high=0), "-7", -7),
        (errors.float_range(0.0, 1.0, low_open=True), "1", 1.0),
        (errors.float_range(0.0), "0", 0.0),
        (errors.int_list(1), "1, 32,256", [1, 32, 256]),
        (errors.choice_list(("a", "b")), "b,a", ["b", "a"]),
    ],
)
def test_types_accept_values_in_range(parse, text, value):
    assert parse(text) == value


@pytest.mark.parametrize(
    "parse, text, message",
    [
        (errors.int_range(1), "0", "must be an integer >= 1, got 0"),
        (errors.int_range(0, 64), "65", "must be an integer in [0, 64], got 65"),
        (errors.int_range(1), "1.5", "must be an integer, got '1.5'"),
        (errors.float_range(0.0, 1.0, low_open=True), "0", "must be a number in (0.0, 1.0], got 0"),
        (errors.float_range(0.0, 1.0, high_open=True), "1", "must be a number in [0.0, 1.0), got 1"),
        (errors.float_range(0.0), "inf", "must be a number >= 0.0, got inf"),
        (errors.float_range(0.0), "x", "must be a number, got 'x'"),
        (errors.int_list(1), ",", "must be a comma-separated list of integers, got ','"),
        (errors.choice_list(("a", "b")), "a,c", "must be a comma-separated list of a, b; got 'a,c'"),
        (errors.readable_file, "/no/such/file", "no such file: '/no/such/file'"),
    ],
)
def test_types_reject_values_out_of_range(parse, text, message):
    with pytest.raises(argparse.ArgumentTypeError) as error:
        parse(text)
    assert str(error.value) == message


def test_load_config_names_the_flag_and_file(bad_files):
    with pytest.raises(UserError, match=r"^--policy .*syntax.yaml: invalid YAML at line 2, column 6: "):
        errors.load_config(bad_files / "syntax.yaml", flag="--policy")
    with pytest.raises(UserError, match=r"^--config .*gone.yaml: cannot read it: No such file or directory$"):
        errors.load_config(bad_files / "gone.yaml")

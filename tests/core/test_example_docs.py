"""docs/ops/examples.md is each op's example call (fastspec.core.examples) with what the numpy reference
returns for it: the page is what examples.py gives today, and it runs on both front ends."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

from fastspec.core import examples
from fastspec.core.example_text import ARRAYS_SETUP, PADDLE_SETUP, call_lines, literal
from tools import op_examples


def run_page(text: str) -> doctest.TestResults:
    """The page as one doctest (a code fence ends the expected output before it, as a blank line does)."""
    text = "\n".join("" if line.startswith("```") else line for line in text.splitlines())
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(parser.get_doctest(text, {}, "docs/ops/examples.md", str(op_examples.PAGE), 0))
    return runner.summarize(verbose=False)


def test_the_page_is_what_the_examples_give():
    assert op_examples.PAGE.read_text() == op_examples.page(), "run `python -m tools.op_examples`"


def test_a_changed_example_call_changes_the_page(monkeypatch):
    written = examples._CALLS["apply_token_bitmask"]

    def changed():
        arrays, attrs = written()
        arrays["bitmask_index"] = np.array([-1, 0], np.int32)
        return arrays, attrs

    monkeypatch.setitem(examples._CALLS, "apply_token_bitmask", changed)
    call_lines.cache_clear()
    try:
        assert op_examples.page() != op_examples.PAGE.read_text()
    finally:
        call_lines.cache_clear()


@pytest.mark.parametrize("setup", [ARRAYS_SETUP, PADDLE_SETUP], ids=["arrays", "paddle"])
def test_the_page_runs_on_both_front_ends(setup):
    text = op_examples.PAGE.read_text()
    assert text.count(ARRAYS_SETUP) == 1
    failed, tried = run_page(text.replace(ARRAYS_SETUP, setup))
    assert failed == 0 and tried > 3 * len(examples.ops_with_examples())


def test_a_wrong_result_on_the_page_fails_its_run():
    text = op_examples.PAGE.read_text()
    first_result = text.index(">>> result.") + len(">>> result.")
    wrong = text[: text.index("[", first_result)] + "[[0]]" + text[text.index("\n", text.index("[", first_result)) :]
    assert run_page(wrong).failed == 1


@pytest.mark.parametrize(
    "value, written",
    [
        (np.array([[-1, -1, -1, -1]], np.int64), "T([[-1] * 4], dtype='int64')"),
        (np.array([0.1, -np.inf], np.float32), "T([0.1, float('-inf')], dtype='float32')"),
        (np.array([True, False]), "T([True, False])"),
    ],
)
def test_literals_read_back_as_the_same_array(value, written):
    assert literal(value) == written
    again = eval(written, {"T": np.array})  # noqa: S307 (our own rendering of a test array)
    assert again.dtype == value.dtype and again.tobytes() == value.tobytes()


@pytest.mark.parametrize("op_name", examples.ops_with_examples())
def test_every_example_says_in_a_line_what_it_sets_up(op_name):
    about = examples.example_about(op_name)
    assert about.strip() and "\n" not in about

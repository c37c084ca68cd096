"""ngram_match and ngram_append on the emulated XPU: bit-exact against the reference on the CPU
tests' random batches (same seeds), on every grid, clusters forward and reversed."""

from __future__ import annotations

import numpy as np
import pytest

from fastspec import arrays as kernels
from fastspec.core.errors import FastspecArgumentError
from tests import ngram_harness as harness
from tests.ngram_cases import ARRAY_NAMES, random_case, spec_example
from tests.xpu.launches import LAUNCHES, describe, launch

CASES, SEEDS = harness.RANDOM_CASES, harness.FIRST_SEEDS


run_xpu = harness.run_with


@pytest.mark.parametrize("options", LAUNCHES, ids=describe)
def test_spec_example(options):
    arrays, attrs = spec_example()
    drafts, lens = run_xpu("ngram_match", arrays, attrs, options)
    assert drafts.tolist() == [[40, 50, 60, -1]] and lens.tolist() == [3]


@pytest.mark.parametrize("op", sorted(CASES))
@pytest.mark.parametrize("chunk", range(2))
def test_random_batches_match_the_reference(op, chunk):
    rng = np.random.default_rng(SEEDS[op] + chunk)  # the CPU tests' first chunks
    for case in range(400):
        arrays, attrs = CASES[op](rng)
        options = launch(case)
        expected = harness.run_reference(op, arrays, attrs)
        harness.assert_same(run_xpu(op, arrays, attrs, options), expected, f"case {case} {attrs} {describe(options)}")


@pytest.mark.parametrize("op", sorted(CASES))
@pytest.mark.parametrize("batch, max_model_len", [(1, 131072), (40, 8192), (300, 256)])
def test_large_shapes_match_the_reference(op, batch, max_model_len):
    rng = np.random.default_rng(batch)
    arrays, attrs = CASES[op](rng, batch=batch, max_model_len=max_model_len)
    attrs["token_budget"] = batch * 3  # the budget kernel streams every slot through its tiles
    expected = harness.run_reference(op, arrays, attrs)
    harness.assert_same(run_xpu(op, arrays, attrs, launch(batch)), expected)


def test_drafts_past_the_xpu_limit_are_an_error():
    arrays, attrs = random_case(np.random.default_rng(0), batch=2, max_model_len=16)
    arrays["draft_tokens"] = np.full((2, 129), -1, np.int64)  # K = 128 > 127
    with pytest.raises(FastspecArgumentError, match="K = 128 .* XPU limit of 127"):
        run_xpu("ngram_match", arrays, attrs, LAUNCHES[0])

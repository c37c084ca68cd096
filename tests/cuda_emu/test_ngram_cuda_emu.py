"""ngram_match and ngram_append (the anchored path included) on the emulated CUDA device: bit-exact
against the reference on the CPU tests' random batches (same seeds), in every block order, and on
shapes that need many blocks and long rows."""

from __future__ import annotations

import numpy as np
import pytest

from fastspec import arrays as kernels
from fastspec import reference as ref
from tests import ngram_harness as harness
from tests.cuda_emu.launches import LAUNCHES, describe, launch
from tests.ngram_cases import ARRAY_NAMES, random_anchors, random_case, spec_example

CASES, SEEDS = harness.RANDOM_CASES, harness.FIRST_SEEDS


run_emulated = harness.run_with


@pytest.mark.parametrize("options", LAUNCHES, ids=describe)
def test_spec_example(options):
    arrays, attrs = spec_example()
    drafts, lens = run_emulated("ngram_match", arrays, attrs, options)
    assert drafts.tolist() == [[40, 50, 60, -1]] and lens.tolist() == [3]


@pytest.mark.parametrize("op", sorted(CASES))
def test_random_batches_match_the_reference(op):
    rng = np.random.default_rng(SEEDS[op])  # the CPU tests' first chunk
    for case in range(300):
        arrays, attrs = CASES[op](rng)
        options = launch(case)
        expected = harness.run_reference(op, arrays, attrs)
        harness.assert_same(run_emulated(op, arrays, attrs, options), expected, f"case {case} {attrs} {describe(options)}")


@pytest.mark.parametrize("op", sorted(CASES))
def test_anchored_drafting_matches_the_reference(op):
    rng = np.random.default_rng(15 + len(op))  # the CPU anchor tests' cases
    for case in range(150):
        arrays, attrs = CASES[op](rng)
        anchors = random_anchors(rng, arrays)
        expected = getattr(ref, op)(*(arrays[name] for name in ARRAY_NAMES), **attrs, ngram_anchor=anchors)
        copies = {name: arrays[name].copy() for name in ARRAY_NAMES}
        anchor = anchors.copy()
        options = launch(case)
        got = getattr(kernels, op)(*(copies[name] for name in ARRAY_NAMES), **attrs, ngram_anchor=anchor, **options)
        for name, g, e in zip(("draft_tokens", "seq_lens_this_time", "ngram_anchor"), (*got, anchor), expected):
            np.testing.assert_array_equal(g, e, err_msg=f"{name} case {case} {attrs} {describe(options)}")


@pytest.mark.parametrize("op", sorted(CASES))
@pytest.mark.parametrize("batch, max_model_len", [(1, 131072), (40, 8192), (1500, 64)])
def test_large_shapes_match_the_reference(op, batch, max_model_len):
    rng = np.random.default_rng(batch)
    arrays, attrs = CASES[op](rng, batch=batch, max_model_len=max_model_len)
    attrs["token_budget"] = batch * 3  # the budget kernel: one block of 1024 threads striding over the slots
    expected = harness.run_reference(op, arrays, attrs)
    harness.assert_same(run_emulated(op, arrays, attrs, launch(batch)), expected)


def test_batch_above_the_cuda_limit_is_the_cpu_backends_error():
    arrays, attrs = random_case(np.random.default_rng(0), batch=4097, max_model_len=8)
    with pytest.raises(ValueError, match="batch") as emulated:
        run_emulated("ngram_match", arrays, attrs, LAUNCHES[0])
    assert "ngram_match" in str(emulated.value)


def test_bad_input_gets_the_cpu_backends_error():
    arrays, attrs = random_case(np.random.default_rng(0), batch=3, max_model_len=16)
    arrays["seq_lens_encoder"] = arrays["seq_lens_encoder"].astype(np.int64)
    with pytest.raises(ValueError) as cpu:
        run_emulated("ngram_match", arrays, attrs, {})
    with pytest.raises(ValueError) as emulated:
        run_emulated("ngram_match", arrays, attrs, LAUNCHES[0])
    assert type(emulated.value) is type(cpu.value) and str(emulated.value) == str(cpu.value)
    assert "seq_lens_encoder" in str(cpu.value)

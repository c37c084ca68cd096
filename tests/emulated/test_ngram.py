"""ngram_match and ngram_append (the anchored path included) on the emulated XPU and the emulated
CUDA device: bit-exact against the reference on the CPU tests' random batches (same seeds), in
every launch, on shapes that need many workers and long rows; bad input gets the CPU's error."""

from __future__ import annotations

import numpy as np
import pytest

from fastspec import arrays
from fastspec import reference as ref
from tests.helpers import ngram_harness as harness
from tests.helpers.devices import DEVICES, EVERY_LAUNCH, launch_id
from tests.helpers.ngram_cases import ARRAY_NAMES, random_anchors, random_case, spec_example

CASES, SEEDS = harness.RANDOM_CASES, harness.FIRST_SEEDS


@pytest.mark.parametrize("device, options", EVERY_LAUNCH, ids=launch_id)
def test_spec_example(device, options):
    named, attrs = spec_example()
    drafts, lens = harness.run_with("ngram_match", named, attrs, options)
    assert drafts.tolist() == [[40, 50, 60, -1]] and lens.tolist() == [3]


@pytest.mark.parametrize("device", DEVICES, ids=str)
@pytest.mark.parametrize("op", sorted(CASES))
@pytest.mark.parametrize("chunk", range(2))
def test_random_batches_match_the_reference(device, op, chunk):
    rng = np.random.default_rng(SEEDS[op] + chunk)  # the CPU tests' first chunks
    for case in range(device.random_cases // 2):
        named, attrs = CASES[op](rng)
        options = device.launch(case)
        expected = harness.run_reference(op, named, attrs)
        harness.assert_same(
            harness.run_with(op, named, attrs, options), expected, f"case {case} {attrs} {device.describe(options)}"
        )


@pytest.mark.parametrize("device", DEVICES, ids=str)
@pytest.mark.parametrize("op", sorted(CASES))
def test_anchored_drafting_matches_the_reference(device, op):
    rng = np.random.default_rng(15 + len(op))  # the CPU anchor tests' cases
    for case in range(device.random_cases // 2):
        named, attrs = CASES[op](rng)
        anchors = random_anchors(rng, named)
        expected = getattr(ref, op)(*(named[name] for name in ARRAY_NAMES), **attrs, ngram_anchor=anchors)
        copies = {name: named[name].copy() for name in ARRAY_NAMES}
        anchor = anchors.copy()
        options = device.launch(case)
        got = getattr(arrays, op)(*(copies[name] for name in ARRAY_NAMES), **attrs, ngram_anchor=anchor, **options)
        for name, g, e in zip(("draft_tokens", "seq_lens_this_time", "ngram_anchor"), (*got, anchor), expected):
            np.testing.assert_array_equal(g, e, err_msg=f"{name} case {case} {attrs} {device.describe(options)}")


@pytest.mark.parametrize("device", DEVICES, ids=str)
@pytest.mark.parametrize("op", sorted(CASES))
@pytest.mark.parametrize("shape", ["one long row", "forty rows", "many slots"])
def test_large_shapes_match_the_reference(device, op, shape):
    batch, max_model_len = {"one long row": (1, 131072), "forty rows": (40, 8192), "many slots": device.many_slots}[
        shape
    ]
    rng = np.random.default_rng(batch)
    named, attrs = CASES[op](rng, batch=batch, max_model_len=max_model_len)
    attrs["token_budget"] = batch * 3  # the budget kernel strides over every slot
    expected = harness.run_reference(op, named, attrs)
    harness.assert_same(harness.run_with(op, named, attrs, device.launch(batch)), expected)


@pytest.mark.parametrize("device", DEVICES, ids=str)
def test_bad_input_gets_the_cpu_backends_error(device):
    named, attrs = random_case(np.random.default_rng(0), batch=3, max_model_len=16)
    named["seq_lens_encoder"] = named["seq_lens_encoder"].astype(np.int64)
    with pytest.raises(ValueError) as cpu:
        harness.run_with("ngram_match", named, attrs, {})
    with pytest.raises(ValueError) as emulated:
        harness.run_with("ngram_match", named, attrs, device.launches[0])
    assert type(emulated.value) is type(cpu.value) and str(emulated.value) == str(cpu.value)
    assert "seq_lens_encoder" in str(cpu.value)

"""build_draft_tree and verify_draft_tree on each emulated device: bit-exact against the references on
random batches in every launch of the device (bad trees, launched without the value checks, included), and
a batch larger than the device's workers."""

from __future__ import annotations

import numpy as np
import pytest

import fastspec.arrays
from fastspec import reference as ref
from tests.helpers.devices import DEVICES
from tests.helpers.tree_cases import (
    BUILD_NAMES,
    BUILD_OUTPUTS,
    VERIFY_TREE_NAMES,
    VERIFY_TREE_OUTPUTS,
    copies,
    random_build_case,
    random_verify_tree_case,
)

CASES = 160


@pytest.mark.parametrize("device", DEVICES, ids=str)
def test_build_random_batches_match_the_reference(device):
    rng = np.random.default_rng(2401)
    for case in range(CASES):
        options = device.launch(case)
        arrays, attrs = random_build_case(rng)
        expected = ref.build_draft_tree(*(arrays[name] for name in BUILD_NAMES), **attrs)
        c = copies(arrays)
        got = fastspec.arrays.build_draft_tree(*(c[name] for name in BUILD_NAMES), **attrs, **options)
        for name, a, e in zip(BUILD_OUTPUTS, got, expected):
            np.testing.assert_array_equal(a, e, err_msg=f"{name} case {case} {device.describe(options)}")


@pytest.mark.parametrize("device", DEVICES, ids=str)
def test_verify_random_batches_match_the_reference(device):
    rng = np.random.default_rng(2402)
    for case in range(CASES):
        options = device.launch(case)
        arrays, attrs = random_verify_tree_case(rng, bad_trees=case % 4 == 0)
        expected = ref.verify_draft_tree(*(arrays[name] for name in VERIFY_TREE_NAMES), **attrs, check=False)
        c = copies(arrays)
        c["accept_nodes"] = np.zeros_like(c["accept_tokens"], dtype=np.int32)
        fastspec.arrays.prepare(
            "verify_draft_tree", *(c[name] for name in VERIFY_TREE_NAMES), c["accept_nodes"], **attrs, **options
        )()
        for name, e in zip(VERIFY_TREE_OUTPUTS, expected):
            np.testing.assert_array_equal(c[name], e, err_msg=f"{name} case {case} {device.describe(options)}")


@pytest.mark.parametrize("device", DEVICES, ids=str)
def test_a_large_batch_matches_the_reference(device):
    """300 slots: many slots per XPU core, several CUDA blocks."""
    rng = np.random.default_rng(2403)
    arrays, attrs = random_verify_tree_case(rng, strategy="rejection" if device.name == "xpu" else "greedy")
    rows = int(arrays["cu_seqlens_q_output"][-1])
    copies_ = 300 // len(arrays["step_idx"]) + 1
    by_row = ("target_tokens", "target_probs", "draft_probs")
    big = {
        name: None if value is None else np.concatenate([value[:rows] if name in by_row else value] * copies_)
        for name, value in arrays.items()
        if name not in ("end_tokens", "cu_seqlens_q_output")
    }
    big["end_tokens"] = arrays["end_tokens"]
    offsets = arrays["cu_seqlens_q_output"][1:] + rows * np.arange(copies_)[:, None]
    big["cu_seqlens_q_output"] = np.concatenate([[0], offsets.reshape(-1)]).astype(np.int32)
    expected = ref.verify_draft_tree(*(big[name] for name in VERIFY_TREE_NAMES), **attrs)
    for options in (device.launches[0], device.launches[-1]):
        c = copies(big)
        got = fastspec.arrays.verify_draft_tree(*(c[name] for name in VERIFY_TREE_NAMES), **attrs, **options)
        for name, a, e in zip(VERIFY_TREE_OUTPUTS, got, expected):
            np.testing.assert_array_equal(a, e, err_msg=f"{name} {device.describe(options)}")

"""build_draft_tree and verify_draft_tree on CUDA: bit-exact against the references on random batches (bad
trees launched without the value checks included), and a captured CUDA Graph replayed on new trees.

On the CUDA emulator without a GPU: the random batches, with a few cases (the replay `needs_gpu`)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")  # the whole module needs PyTorch

import numpy as np

import fastspec.arrays
from fastspec import reference as ref
from tests.helpers.cuda import capture, copy_into, target, to_device
from tests.helpers.tree_cases import (
    BUILD_NAMES,
    BUILD_OUTPUTS,
    VERIFY_TREE_NAMES,
    VERIFY_TREE_OUTPUTS,
    random_build_case,
    random_verify_tree_case,
)


def test_random_batches_match_the_reference():
    rng = np.random.default_rng(2404)
    for case in range(target.cases(300)):
        arrays, attrs = random_build_case(rng)
        expected = ref.build_draft_tree(*(arrays[name] for name in BUILD_NAMES), **attrs)
        t = to_device(arrays)
        got = fastspec.arrays.build_draft_tree(*(t[name] for name in BUILD_NAMES), **attrs, **target.kw)
        target.synchronize()
        for name, a, e in zip(BUILD_OUTPUTS, got, expected):
            np.testing.assert_array_equal(a.cpu().numpy(), e, err_msg=f"build {name} case {case}")

        arrays, attrs = random_verify_tree_case(rng, bad_trees=case % 4 == 0)
        expected = ref.verify_draft_tree(*(arrays[name] for name in VERIFY_TREE_NAMES), **attrs, check=False)
        t = to_device(arrays)
        got = fastspec.arrays.verify_draft_tree(*(t[name] for name in VERIFY_TREE_NAMES), **attrs, **target.kw)
        target.synchronize()
        for name, a, e in zip(VERIFY_TREE_OUTPUTS, got, expected):
            np.testing.assert_array_equal(a.cpu().numpy(), e, err_msg=f"verify {name} case {case}")


@pytest.mark.needs_gpu
def test_graph_replays_on_new_trees():
    rng = np.random.default_rng(2405)
    arrays, attrs = random_verify_tree_case(rng)
    tensors = to_device(arrays)
    tensors["accept_nodes"] = torch.empty_like(tensors["accept_tokens"], dtype=torch.int32)
    graph = capture(
        lambda: fastspec.arrays.verify_draft_tree(
            *(tensors[name] for name in VERIFY_TREE_NAMES), tensors["accept_nodes"], **attrs
        )
    )
    for case in range(20):
        new = dict(arrays)  # the same shapes and trees, new tokens and targets
        new["draft_tree_tokens"] = rng.integers(-1, 4, size=arrays["draft_tree_tokens"].shape).astype(np.int64)
        new["target_tokens"] = rng.integers(-1, 4, size=arrays["target_tokens"].shape).astype(np.int64)
        copy_into(tensors, new)
        graph.replay()
        torch.cuda.synchronize()
        expected = ref.verify_draft_tree(*(new[name] for name in VERIFY_TREE_NAMES), **attrs, check=False)
        for name, e in zip(VERIFY_TREE_OUTPUTS, expected):
            np.testing.assert_array_equal(tensors[name].cpu().numpy(), e, err_msg=f"{name} replay {case}")

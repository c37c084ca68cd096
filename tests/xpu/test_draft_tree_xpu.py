"""build_draft_tree and verify_draft_tree on the emulated XPU: bit-exact against the references on random
batches, on every grid, clusters forward and reversed."""

from __future__ import annotations

import numpy as np

from fastspec import arrays as kernels
from fastspec import reference as ref
from tests.tree_cases import (BUILD_NAMES, BUILD_OUTPUTS, VERIFY_TREE_NAMES, VERIFY_TREE_OUTPUTS, copies,
                              random_build_case, random_verify_tree_case)
from tests.xpu.launches import describe, launch


def check_tree_ops_on(launch, describe, cases: int, seed: int) -> None:
    """Both ops on an emulated device (``launch(case)``: its keywords) equal the references, bad trees
    (launched without the value checks) included."""
    rng = np.random.default_rng(seed)
    for case in range(cases):
        options = launch(case)
        arrays, attrs = random_build_case(rng)
        expected = ref.build_draft_tree(*(arrays[name] for name in BUILD_NAMES), **attrs)
        c = copies(arrays)
        got = kernels.build_draft_tree(*(c[name] for name in BUILD_NAMES), **attrs, **options)
        for name, a, e in zip(BUILD_OUTPUTS, got, expected):
            np.testing.assert_array_equal(a, e, err_msg=f"build {name} case {case} {describe(options)}")

        arrays, attrs = random_verify_tree_case(rng, bad_trees=case % 4 == 0)
        expected = ref.verify_draft_tree(*(arrays[name] for name in VERIFY_TREE_NAMES), **attrs, check=False)
        c = copies(arrays)
        c["accept_nodes"] = np.zeros_like(c["accept_tokens"], dtype=np.int32)
        kernels.prepare("verify_draft_tree", *(c[name] for name in VERIFY_TREE_NAMES), c["accept_nodes"], **attrs,
                        **options)()
        for name, e in zip(VERIFY_TREE_OUTPUTS, expected):
            np.testing.assert_array_equal(c[name], e, err_msg=f"verify {name} case {case} {describe(options)}")


def test_tree_ops_match_the_reference():
    check_tree_ops_on(launch, describe, cases=160, seed=2401)


def test_large_batch_strides_over_the_cores():
    rng = np.random.default_rng(2402)
    arrays, attrs = random_verify_tree_case(rng)
    big = {name: np.concatenate([value] * 100) if name not in ("end_tokens", "target_tokens", "cu_seqlens_q_output")
           else value for name, value in arrays.items()}
    rows = int(arrays["cu_seqlens_q_output"][-1])
    big["target_tokens"] = np.concatenate([arrays["target_tokens"][:rows]] * 100)
    big["cu_seqlens_q_output"] = np.concatenate([[0], (arrays["cu_seqlens_q_output"][1:] + rows * np.arange(100)[:, None]).reshape(-1)]).astype(np.int32)
    expected = ref.verify_draft_tree(*(big[name] for name in VERIFY_TREE_NAMES), **attrs)
    c = copies(big)
    got = kernels.verify_draft_tree(*(c[name] for name in VERIFY_TREE_NAMES), **attrs, backend="xpu_emulator",
                                    xpu_grid=(2, 16))
    for name, a, e in zip(VERIFY_TREE_OUTPUTS, got, expected):
        np.testing.assert_array_equal(a, e, err_msg=name)

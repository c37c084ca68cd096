"""verify_draft_tokens with strategy REJECTION: the Paddle op and the bindings' CPU path against
the numpy reference (f32, f16, bf16), losslessness through the op, batch invariance, bad inputs."""

from __future__ import annotations

import numpy as np
import paddle
import pytest

import fastspec.ops as ops
from fastspec import reference as ref
from tests.helpers.probability_verify import PROBS, assert_same, check_random_batches, positional, run_op
from tests.helpers.rejection_cases import ARRAY_NAMES, chi2_matches, distribution_case, random_case, random_rows
from tests.helpers.static_graph import run_static

OTHERS = tuple(name for name in ARRAY_NAMES if name not in PROBS)


def run_reference(arrays: dict, **attrs):
    return ref.verify_rejection(*(arrays[name] for name in ARRAY_NAMES), **attrs)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_random_batches_match_the_reference(dtype):
    check_random_batches("rejection", dtype, {"float32": 1, "float16": 2, "bfloat16": 3}[dtype], cases=250)


def test_emitted_tokens_follow_the_target_through_the_op():
    rng = np.random.default_rng(8)
    p, q = random_rows(rng, 3, 5), random_rows(rng, 2, 5, zero_fraction=0.3)
    arrays = distribution_case(p, q, 4000, seed=1)
    (tokens, num), _ = run_op(arrays)
    for position in range(2):
        reached = num > position
        fits, stat, crit = chi2_matches(np.bincount(tokens[reached, position], minlength=5), p[position])
        assert fits, f"position {position}: chi2 {stat:.1f} > {crit:.1f}"


def test_batch_invariance_through_the_op():
    rng = np.random.default_rng(4)
    arrays = random_case(rng, batch=6)
    full, _ = run_op(arrays)
    order = rng.permutation(6)
    # the same requests in another slot order, rows repacked accordingly
    cu = arrays["cu_seqlens_q_output"]
    spans = [(int(cu[b]), int(cu[b + 1])) for b in order]
    permuted = {
        name: (None if value is None else value[order])
        for name, value in arrays.items()
        if name not in PROBS + ("cu_seqlens_q_output", "end_tokens")
    }
    permuted["end_tokens"] = arrays["end_tokens"]
    for name in PROBS:
        parts = [arrays[name][lo:hi] for lo, hi in spans]
        permuted[name] = np.concatenate(parts) if parts else arrays[name][:0]
    permuted["cu_seqlens_q_output"] = np.concatenate([[0], np.cumsum([hi - lo for lo, hi in spans])]).astype(np.int32)
    got, _ = run_op(permuted)
    np.testing.assert_array_equal(got[0], full[0][order])
    np.testing.assert_array_equal(got[1], full[1][order])


def _base():
    p = np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]], np.float32)
    return distribution_case(p, p[:1], 2)


@pytest.mark.parametrize(
    "change, argument",
    [
        (lambda a: a.update(target_probs=None), "target_probs"),
        (lambda a: a.update(draft_probs=None), "draft_probs"),
        (lambda a: a.update(draft_probs=a["draft_probs"][:, :2].copy()), "draft_probs"),
        (lambda a: a.update(target_probs=a["target_probs"][:3].copy()), "target_probs"),
        (lambda a: a.update(target_probs=a["target_probs"].reshape(-1).copy()), "target_probs"),
    ],
)
def test_bad_probability_inputs_name_the_argument(change, argument):
    arrays = _base()
    change(arrays)
    tensors = {name: None if value is None else paddle.to_tensor(value) for name, value in arrays.items()}
    with pytest.raises(ValueError, match=argument):
        ops.verify_draft_tokens(
            *positional(tensors),
            strategy="rejection",
            target_probs=tensors["target_probs"],
            draft_probs=tensors["draft_probs"],
        )


def test_mixed_probability_dtypes_are_an_error():
    arrays = _base()
    tensors = {name: None if value is None else paddle.to_tensor(value) for name, value in arrays.items()}
    with pytest.raises(ValueError, match="draft_probs"):
        ops.verify_draft_tokens(
            *positional(tensors),
            strategy="rejection",
            target_probs=tensors["target_probs"],
            draft_probs=tensors["draft_probs"].astype("float16"),
        )


def test_static_graph_build_and_run():
    arrays = _base()
    got = run_static(
        arrays,
        lambda feeds: ops.verify_draft_tokens(
            *positional(feeds),
            strategy="rejection",
            target_probs=feeds["target_probs"],
            draft_probs=feeds["draft_probs"],
        ),
    )
    assert_same(got, run_reference(arrays))

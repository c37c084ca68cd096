"""The checked calls at raw speed keep every check of the general path.

The Paddle ops run the custom op first and let its C++ guard check; the array API
reuses the verdict of an earlier call with the same key. These are the calls those
shortcuts could wrongly let through, each of which the general path refuses by name.
"""

from __future__ import annotations

import numpy as np
import paddle
import pytest

import fastspec.arrays
import fastspec.ops as ops
from fastspec.core.errors import FastspecArgumentError, FastspecTypeError
from fastspec.core.schema import VerifyStrategy
from tests.ops.test_argument_errors import valid_call


def _paddle(arrays: dict) -> dict:
    return {k: None if v is None else paddle.to_tensor(v) for k, v in arrays.items()}


@pytest.mark.parametrize("value", [np.int64(2), True, 2.0])
@pytest.mark.parametrize("front_end", ["paddle", "arrays"])
def test_an_int_attribute_of_another_type_is_refused(front_end, value):
    """Paddle itself would take a numpy int; the checks want a Python int (and a bool is not one)."""
    arrays, _ = valid_call("ngram_match")
    fn, given = (ops.ngram_match, _paddle(arrays)) if front_end == "paddle" else (fastspec.arrays.ngram_match, arrays)
    fn(**given, max_ngram_size=2)  # the same call with an int runs (and the array API remembers it)
    with pytest.raises(FastspecTypeError, match="ngram_match: attribute 'max_ngram_size' must be an int"):
        fn(**given, max_ngram_size=value)


def test_an_empty_optional_tensor_is_still_checked():
    """Paddle hands an empty optional tensor to the kernel as absent: its dtype and shape are Python's to check."""
    arrays, attrs = valid_call("verify_draft_tokens")
    arrays["reasoning_status"] = np.zeros(0, np.int64)
    with pytest.raises(FastspecArgumentError, match="verify_draft_tokens: argument 'reasoning_status' must be int32"):
        ops.verify_draft_tokens(**_paddle(arrays), **attrs)


def test_a_tensor_the_strategy_ignores_must_still_be_a_tensor():
    arrays, attrs = valid_call("verify_draft_tokens")
    tensors = _paddle(arrays)
    tensors["candidate_ids"] = arrays["candidate_ids"]  # greedy does not read it, but numpy is no paddle.Tensor
    with pytest.raises(FastspecTypeError, match="'candidate_ids' must be a paddle.Tensor"):
        ops.verify_draft_tokens(**tensors, **attrs)


@pytest.mark.parametrize("strategy", ["greedy", "GREEDY", "Greedy", VerifyStrategy.GREEDY])
@pytest.mark.parametrize("front_end", ["paddle", "arrays"])
def test_every_spelling_of_a_strategy_gives_the_same_result(front_end, strategy):
    arrays, _ = valid_call("verify_draft_tokens")
    if front_end == "paddle":
        expected = ops.verify_draft_tokens(**_paddle(arrays), strategy="greedy")
        got = ops.verify_draft_tokens(**_paddle(arrays), strategy=strategy)
        expected, got = [t.numpy() for t in expected], [t.numpy() for t in got]
    else:
        expected = fastspec.arrays.verify_draft_tokens(**{k: v.copy() for k, v in arrays.items()}, strategy="greedy")
        got = fastspec.arrays.verify_draft_tokens(**{k: v.copy() for k, v in arrays.items()}, strategy=strategy)
    for a, b in zip(expected, got):
        np.testing.assert_array_equal(a, b)


def test_a_torch_tensor_is_no_paddle_tensor():
    torch = pytest.importorskip("torch")
    arrays, attrs = valid_call("ngram_match")
    tensors = _paddle(arrays)
    tensors["prompt_lens"] = torch.from_numpy(arrays["prompt_lens"])
    with pytest.raises(FastspecTypeError, match="ngram_match: argument 'prompt_lens' must be a paddle.Tensor"):
        ops.ngram_match(**tensors, **attrs)


@pytest.mark.parametrize("fn", [ops.ngram_match, fastspec.arrays.ngram_match])
def test_a_call_that_does_not_bind_is_the_ops_type_error(fn):
    arrays, _ = valid_call("ngram_match")
    with pytest.raises(FastspecTypeError, match="ngram_match: missing a required argument: 'max_ngram_size'"):
        fn(*arrays.values())
    with pytest.raises(FastspecTypeError, match="ngram_match: got an unexpected keyword argument 'nope'"):
        fn(*arrays.values(), max_ngram_size=2, nope=1)


def test_the_array_api_checks_a_remembered_call_again_when_an_array_changes():
    """A verdict is kept per (dtype, shape, contiguity) of every array: a strided view, a new
    dtype or a new batch of an otherwise remembered call is checked again."""
    arrays, attrs = valid_call("update_model_status")
    fastspec.arrays.update_model_status(**{k: v.copy() for k, v in arrays.items()}, **attrs)
    wide = np.zeros((2, 6), np.int64)
    strided = dict(arrays, accept_tokens=wide[:, :3])
    with pytest.raises(FastspecArgumentError, match="'accept_tokens' is a strided"):
        fastspec.arrays.update_model_status(**strided, **attrs)
    with pytest.raises(FastspecArgumentError, match="'step_idx' must be int64"):
        fastspec.arrays.update_model_status(**dict(arrays, step_idx=arrays["step_idx"].astype(np.int32)), **attrs)
    with pytest.raises(FastspecArgumentError, match="'accept_num' has 1 rows"):
        fastspec.arrays.update_model_status(**dict(arrays, accept_num=arrays["accept_num"][:1]), **attrs)


def test_the_array_api_gives_the_same_bits_on_a_remembered_call():
    arrays, attrs = valid_call("top_p_candidates")
    first = fastspec.arrays.top_p_candidates(**arrays, **attrs)
    second = fastspec.arrays.top_p_candidates(**arrays, **attrs)  # the remembered verdict; new outputs again
    for a, b in zip(first, second):
        assert a is not b
        np.testing.assert_array_equal(a, b)


def test_a_prepared_launch_keeps_the_outputs_it_allocated():
    """prepare() allocates the outputs left out; they must outlive the call that made them (the
    launch wrote into freed memory before)."""
    arrays, attrs = valid_call("top_p_candidates")
    rows = 512
    probs = np.tile(arrays["probs"], (rows // 2, 1))
    launch = fastspec.arrays.prepare(
        "top_p_candidates", probs, np.full(rows, 0.8, np.float32), np.arange(rows, dtype=np.int32) % 2, **attrs
    )
    ids, scores, lens = (
        launch.arrays["candidate_ids"],
        launch.arrays["candidate_scores"],
        launch.arrays["candidate_lens"],
    )
    launch()
    expected = fastspec.arrays.top_p_candidates(
        probs, np.full(rows, 0.8, np.float32), np.arange(rows, dtype=np.int32) % 2, **attrs
    )
    for a, b in zip((ids, scores, lens), expected):
        np.testing.assert_array_equal(a, b)


def test_the_array_api_checks_the_trees_of_a_remembered_call():
    """verify_draft_tree's trees are values, no part of the remembered key: a malformed tree in arrays
    of a remembered call's shapes is refused by name all the same."""
    from tests.ops.test_draft_tree import _bad_tree_call

    good = _bad_tree_call([-1, 0, 0, 2], 4)
    for _ in range(2):  # the second call is the remembered one
        fastspec.arrays.verify_draft_tree(
            **{k: None if v is None else v.copy() for k, v in good.items()}, strategy="greedy"
        )
    with pytest.raises(FastspecArgumentError, match="'draft_tree_parents' of slot 1 is not a tree: node 2 has no"):
        fastspec.arrays.verify_draft_tree(**_bad_tree_call([-1, 0, -1, 1], 4), strategy="greedy")

"""Extreme per-slot values give the reference's answer and malformed calls a named error, on the
Paddle op, the array API's CPU kernels and the emulated XPU kernels (int64 limits, budgets past
int32, None for a required tensor, shapes that disagree, attributes past int32, static graphs)."""

from __future__ import annotations

import numpy as np
import paddle
import pytest

import fastspec.arrays
import fastspec.ops as ops
from fastspec import reference as ref
from fastspec.core.errors import FastspecArgumentError, FastspecTypeError
from fastspec.core.schema import SCHEMAS
from tests.helpers.ngram_cases import ARRAY_NAMES
from tests.helpers.raw_op import raw_op
from tests.ops.test_argument_errors import valid_call

NGRAM_OPS = ("ngram_match", "ngram_append")
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def one_slot(max_dec_len: int) -> dict[str, np.ndarray]:
    """The issue's slot: prompt [5, 7], generated [5], one draft allowed."""
    return {
        "token_ids_all": np.array([[5, 7, 5, 0]], np.int64),
        "prompt_lens": np.array([2], np.int64),
        "step_idx": np.array([1], np.int64),
        "draft_token_num": np.array([1], np.int32),
        "draft_tokens": np.array([[5, -1]], np.int64),
        "seq_lens_this_time": np.array([1], np.int32),
        "seq_lens_encoder": np.array([0], np.int32),
        "seq_lens_decoder": np.array([1], np.int32),
        "max_dec_len": np.array([max_dec_len], np.int64),
    }


def run_every_front_end(op: str, arrays: dict, attrs: dict) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The op's (draft_tokens, seq_lens_this_time) from the Paddle op, the CPU and the emulated XPU kernels."""
    results = {}
    tensors = {name: paddle.to_tensor(arrays[name]) for name in ARRAY_NAMES}
    drafts, lens = getattr(ops, op)(*(tensors[name] for name in ARRAY_NAMES), **attrs)
    results["paddle"] = (drafts.numpy(), lens.numpy())
    for label, options in (("cpu", {}), ("xpu", {"backend": "xpu_emulator", "xpu_grid": (2, 16)})):
        copies = {name: arrays[name].copy() for name in ARRAY_NAMES}
        getattr(fastspec.arrays, op)(*(copies[name] for name in ARRAY_NAMES), **attrs, **options)
        results[label] = (copies["draft_tokens"], copies["seq_lens_this_time"])
    return results


def assert_reference_answer(op: str, arrays: dict, attrs: dict) -> None:
    expected = getattr(ref, op)(*(arrays[name] for name in ARRAY_NAMES), **attrs)
    for label, (drafts, lens) in run_every_front_end(op, arrays, attrs).items():
        np.testing.assert_array_equal(drafts, expected[0], err_msg=f"{op} {label} draft_tokens")
        np.testing.assert_array_equal(lens, expected[1], err_msg=f"{op} {label} seq_lens_this_time")


@pytest.mark.parametrize("op", NGRAM_OPS)
@pytest.mark.parametrize("max_dec_len", [INT64_MIN, INT64_MIN + 1, -(2**31), -1, 0, 2, 3, INT64_MAX])
def test_max_dec_len_near_int64_min_drafts_as_the_reference(op, max_dec_len):
    arrays = one_slot(max_dec_len)
    assert_reference_answer(op, arrays, {"max_ngram_size": 1})
    if max_dec_len == INT64_MIN:  # the case: max_dec_len - s - 1 wrapped and the slot drafted
        assert ref.ngram_match(*(arrays[name] for name in ARRAY_NAMES), max_ngram_size=1)[1].tolist() == [1]


@pytest.mark.parametrize("op", NGRAM_OPS)
def test_extreme_prompt_lens_and_step_idx_on_the_threaded_path(op):
    """Enough tokens to scan that the CPU kernel uses its threads (>= 2^16), with per-slot values at the
    ends of int64 beside them: the threading decision's sum no longer overflows (UBSan checks that
    part in the fuzzer's campaign); the answer is the reference's."""
    rng = np.random.default_rng(12)
    batch, length = 12, 16384
    tokens = rng.integers(0, 4, (batch, length)).astype(np.int64)
    extremes = [INT64_MAX, INT64_MIN, INT64_MAX - 1, -1, 2**31, -(2**31)]
    arrays = {
        "token_ids_all": tokens,
        "prompt_lens": np.array(extremes + [length // 2] * 6, np.int64),
        "step_idx": np.array([length // 4] * 6 + extremes, np.int64),
        "draft_token_num": np.full(batch, 4, np.int32),
        "draft_tokens": np.full((batch, 5), -1, np.int64),
        "seq_lens_this_time": np.ones(batch, np.int32),
        "seq_lens_encoder": np.zeros(batch, np.int32),
        "seq_lens_decoder": np.ones(batch, np.int32),
        "max_dec_len": np.array([INT64_MAX, INT64_MIN] * 6, np.int64),
    }
    arrays["prompt_lens"][6:] = length // 2  # slots 6.. have a valid prompt and extreme step_idx
    arrays["step_idx"][-1] = length // 4  # and the last one a valid slot that drafts
    arrays["max_dec_len"][-1] = INT64_MAX
    assert_reference_answer(op, arrays, {"max_ngram_size": 3})


def budget_case() -> dict[str, np.ndarray]:
    """The issue's two slots: a prefill slot with seq_lens_this_time = -5 and the decode slot above."""
    arrays = {name: np.concatenate([value, value]) for name, value in one_slot(100).items()}
    arrays["seq_lens_encoder"] = np.array([3, 0], np.int32)
    arrays["seq_lens_this_time"] = np.array([-5, 1], np.int32)
    return arrays


@pytest.mark.parametrize("op", NGRAM_OPS)
def test_token_budget_beyond_int32_is_named(op):
    arrays = budget_case()
    with pytest.raises(FastspecArgumentError, match=f"{op}: attribute 'token_budget' must be in"):
        getattr(fastspec.arrays, op)(*(arrays[name] for name in ARRAY_NAMES), max_ngram_size=1, token_budget=INT64_MAX)
    with pytest.raises(FastspecArgumentError, match=f"{op}: attribute 'token_budget'"):
        tensors = [paddle.to_tensor(arrays[name]) for name in ARRAY_NAMES]
        getattr(ops, op)(*tensors, max_ngram_size=1, token_budget=INT64_MAX)


@pytest.mark.parametrize("op", NGRAM_OPS)
@pytest.mark.parametrize("budget", [2**31 - 1, INT64_MAX])
def test_the_kernels_budget_arithmetic_saturates(op, budget):
    """The kernels take a 64-bit budget (the schema allows int32): past the Python checks, a budget
    of 2^63 - 1 with a negative running total gives the reference's answer on every backend."""
    arrays = budget_case()
    expected = getattr(ref, op)(*(arrays[name] for name in ARRAY_NAMES), max_ngram_size=1, token_budget=budget)
    for options in ({}, {"backend": "xpu_emulator"}):
        copies = {name: value.copy() for name, value in arrays.items()}
        launch = fastspec.arrays.prepare(
            op, *(copies[name] for name in ARRAY_NAMES), max_ngram_size=1, token_budget=1, **options
        )
        args = list(launch.args)
        budget_index = SCHEMAS[op].attr_names.index("token_budget")
        args[6] = [budget if i == budget_index else v for i, v in enumerate(args[6])]  # past the checks
        launch.func(*args, **launch.keywords)
        np.testing.assert_array_equal(copies["draft_tokens"], expected[0], err_msg=str(options))
        np.testing.assert_array_equal(copies["seq_lens_this_time"], expected[1], err_msg=str(options))
    assert expected[1].tolist() == [-5, 2]  # the reference answer: the decode slot drafts


def required_tensors():
    for name, op in SCHEMAS.items():
        for t in op.inputs:
            if not t.optional and not t.needed_by:
                yield name, t.name


@pytest.mark.parametrize("op, argument", list(required_tensors()))
def test_none_for_a_required_tensor_is_named(op, argument):
    arrays, attrs = valid_call(op)
    arrays[argument] = None
    tensors = {k: None if v is None else paddle.to_tensor(v) for k, v in arrays.items()}
    for call in (lambda: getattr(ops, op)(**tensors, **attrs), lambda: getattr(fastspec.arrays, op)(**arrays, **attrs)):
        with pytest.raises(FastspecArgumentError, match=f"{op}: argument '{argument}' is required"):
            call()
    paddle.enable_static()
    try:
        with paddle.static.program_guard(paddle.static.Program()):
            feeds = {
                k: None if v is None else paddle.static.data(k, list(v.shape), str(v.dtype)) for k, v in arrays.items()
            }
            with pytest.raises(FastspecArgumentError, match=f"{op}: argument '{argument}' is required"):
                getattr(ops, op)(**feeds, **attrs)
    finally:
        paddle.disable_static()


def disagreeing_shapes():
    yield "topp", "candidate_ids", lambda a: a["candidate_ids"][:0]
    yield "topp", "candidate_scores", lambda a: a["candidate_scores"][:0]
    yield "topp", "candidate_lens", lambda a: a["candidate_lens"][:0]
    yield "rejection", "target_probs", lambda a: a["target_probs"][:, :0]
    yield "rejection", "draft_probs", lambda a: a["draft_probs"][:, :0]


@pytest.mark.parametrize("strategy, argument, change", list(disagreeing_shapes()), ids=lambda v: str(v)[:20])
def test_disagreeing_shapes_are_named(strategy, argument, change):
    arrays, _ = valid_call("verify_draft_tokens")
    if strategy == "rejection":
        arrays["draft_probs"] = change(arrays) if argument == "draft_probs" else arrays["draft_probs"]
        arrays["target_probs"] = change(arrays) if argument == "target_probs" else arrays["target_probs"]
    else:
        arrays[argument] = change(arrays)
    attrs = {"strategy": strategy}
    match = f"verify_draft_tokens: .*'{argument}'"
    with pytest.raises(FastspecArgumentError, match=match):
        fastspec.arrays.verify_draft_tokens(**arrays, **attrs)
    tensors = {k: paddle.to_tensor(v) for k, v in arrays.items()}
    with pytest.raises(FastspecArgumentError, match=match):
        ops.verify_draft_tokens(**tensors, **attrs)
    with pytest.raises(FastspecArgumentError, match=match):  # the C++ guard alone (static graphs)
        raw_op("verify_draft_tokens", tensors, attrs)


def test_attribute_outside_int32_is_named():
    arrays, attrs = valid_call("ngram_match")
    tensors = {k: paddle.to_tensor(v) for k, v in arrays.items()}
    with pytest.raises(FastspecArgumentError, match="ngram_match: attribute 'max_ngram_size' must be in"):
        ops.ngram_match(**tensors, max_ngram_size=2**31)


def test_numpy_array_for_a_paddle_op_is_named():
    arrays, attrs = valid_call("ngram_match")
    tensors = {k: paddle.to_tensor(v) for k, v in arrays.items()}
    tensors["prompt_lens"] = arrays["prompt_lens"]
    with pytest.raises(FastspecTypeError, match="ngram_match: argument 'prompt_lens' must be a paddle.Tensor"):
        ops.ngram_match(**tensors, **attrs)


def test_a_static_graph_run_names_the_op_and_the_argument():
    """Sizes unknown when the graph is built: the C++ guard refuses at run time, and its message
    survives Paddle's executor (a ValueError, as FastspecArgumentError is one), no bare std::exception."""
    arrays, attrs = valid_call("ngram_match")
    paddle.enable_static()
    try:
        program = paddle.static.Program()
        with paddle.static.program_guard(program):
            feeds = {k: paddle.static.data(k, [-1] * v.ndim, str(v.dtype)) for k, v in arrays.items()}
            out = ops.ngram_match(**feeds, **attrs)
        bad = dict(arrays, prompt_lens=np.concatenate([arrays["prompt_lens"]] * 2))
        with pytest.raises(ValueError, match=r"ngram_match: argument 'prompt_lens' has shape \[4\]"):
            paddle.static.Executor(paddle.CPUPlace()).run(program, feed=bad, fetch_list=list(out))
    finally:
        paddle.disable_static()

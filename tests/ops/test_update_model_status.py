"""update_model_status: the Paddle op (and the bindings' CPU path) against the numpy reference,
one test per rule of docs/ops/update_model_status.md, and bad inputs."""

from __future__ import annotations

import numpy as np
import paddle
import pytest

import fastspec.arrays
import fastspec.ops as ops
from fastspec import reference as ref
from tests.helpers.static_graph import run_static
from tests.helpers.verify_update_cases import UPDATE_NAMES, UPDATE_OUTPUTS, random_update_case

END = 2  # end_tokens = [END, 3] in the hand-written cases
OUT_NAMES = (*UPDATE_OUTPUTS, "has_running")


def run_op(arrays: dict) -> dict:
    tensors = {name: paddle.to_tensor(value) for name, value in arrays.items()}
    outs = ops.update_model_status(*(tensors[name] for name in UPDATE_NAMES))
    assert len(outs) == 10
    for name, out in zip(UPDATE_OUTPUTS, outs):
        assert out is tensors[name]
    assert outs[-1].dtype == paddle.bool and outs[-1].shape == [1] and outs[-1].place.is_cpu_place()
    return {name: out.numpy() for name, out in zip(OUT_NAMES, outs)}


def run_bindings(arrays: dict) -> dict:
    copies = {name: np.ascontiguousarray(value).copy() for name, value in arrays.items()}
    copies["has_running"] = np.array([True, True])[:1]  # overwritten
    fastspec.arrays.update_model_status(*(copies[name] for name in UPDATE_NAMES), copies["has_running"])
    return {name: copies[name] for name in OUT_NAMES}


def run_reference(arrays: dict) -> dict:
    return dict(zip(OUT_NAMES, ref.update_model_status(*(arrays[name] for name in UPDATE_NAMES))))


def assert_same(actual: dict, expected: dict, context: str = "") -> None:
    for name in OUT_NAMES:
        np.testing.assert_array_equal(actual[name], expected[name], err_msg=f"{name} {context}")


def case(
    accepted=(), *, kind: str = "decode", k: int = 3, L: int = 20, prompt: int = 4, step: int = 2, max_dec: int = 100
) -> dict:
    """One slot holding `accepted` tokens; kind: decode, prefill, stopped, blocked, inactive."""
    accept_tokens = np.full((1, k + 1), -1, np.int64)
    accept_tokens[0, : len(accepted)] = accepted
    return {
        "seq_lens_encoder": np.array([7 if kind == "prefill" else 0], np.int32),
        "seq_lens_decoder": np.array([0 if kind in ("prefill", "inactive") else 9], np.int32),
        "seq_lens_this_time": np.array([3], np.int32),
        "step_idx": np.array([step], np.int64),
        "stop_flags": np.array([kind == "stopped"]),
        "accept_tokens": accept_tokens,
        "accept_num": np.array([len(accepted)], np.int32),
        "draft_tokens": np.array([[40] + [41] * k], np.int64),
        "token_ids_all": np.full((1, L), 77, np.int64),
        "prompt_lens": np.array([prompt], np.int64),
        "is_block_step": np.array([kind == "blocked"]),
        "max_dec_len": np.array([max_dec], np.int64),
        "end_tokens": np.array([END, 3], np.int64),
    }


def run_all(arrays: dict) -> dict:
    """The op, checked against the bindings and the reference."""
    out = run_op(arrays)
    assert_same(run_bindings(arrays), out, "bindings")
    assert_same(run_reference(arrays), out, "reference")
    return out


# --- random batches -------------------------------------------------------


@pytest.mark.parametrize("chunk", range(4))
def test_random_batches_match_the_reference(chunk):
    rng = np.random.default_rng(500 + chunk)
    for n in range(500):
        arrays = random_update_case(rng)
        expected = run_reference(arrays)
        assert_same(run_op(arrays), expected, f"case {n}")
        if n % 4 == 0:
            assert_same(run_bindings(arrays), expected, f"bindings case {n}")


def test_large_batch_uses_threads_and_matches_the_reference():
    arrays = random_update_case(np.random.default_rng(8), batch=5000, k=5, max_model_len=64)
    assert_same(run_op(arrays), run_reference(arrays))


# --- one test per rule of docs/ops/update_model_status.md ------------------------------------------


def test_blocked_slot_only_zeroes_this_time_and_accept_num():
    arrays = case([5, 6], kind="blocked")
    out = run_all(arrays)
    assert out["seq_lens_this_time"].tolist() == [0] and out["accept_num"].tolist() == [0]
    for name in (
        "seq_lens_encoder",
        "seq_lens_decoder",
        "step_idx",
        "stop_flags",
        "accept_tokens",
        "draft_tokens",
        "token_ids_all",
    ):
        np.testing.assert_array_equal(out[name], arrays[name], err_msg=name)
    assert out["has_running"].tolist() == [False]


def test_blocked_wins_over_stopped():
    arrays = case([5, 6], kind="blocked")
    arrays["stop_flags"][0] = True
    out = run_all(arrays)
    assert out["seq_lens_decoder"].tolist() == [9]  # untouched, not zeroed as a stopped slot would be
    assert out["accept_tokens"][0, :2].tolist() == [5, 6]


def test_stopped_slot_is_zeroed_and_nothing_else_changes():
    arrays = case([5, 6], kind="stopped")
    out = run_all(arrays)
    for name in ("seq_lens_encoder", "seq_lens_decoder", "seq_lens_this_time", "accept_num"):
        assert out[name].tolist() == [0], name
    assert out["accept_tokens"].tolist() == [[-1] * 4]
    for name in ("step_idx", "stop_flags", "draft_tokens", "token_ids_all"):
        np.testing.assert_array_equal(out[name], arrays[name], err_msg=name)


def test_inactive_slot_is_zeroed():
    arrays = case([5], kind="inactive")
    out = run_all(arrays)
    assert out["seq_lens_this_time"].tolist() == [0] and out["accept_num"].tolist() == [0]
    assert out["accept_tokens"].tolist() == [[-1] * 4] and out["stop_flags"].tolist() == [False]
    np.testing.assert_array_equal(out["token_ids_all"], arrays["token_ids_all"])


def test_running_slot_writes_history_at_prompt_lens_plus_step_idx():
    out = run_all(case([5, 6, 7], prompt=4, step=2))
    assert out["token_ids_all"][0, 6:9].tolist() == [5, 6, 7]
    assert (out["token_ids_all"][0, :6] == 77).all() and (out["token_ids_all"][0, 9:] == 77).all()
    assert out["step_idx"].tolist() == [5] and out["accept_num"].tolist() == [3]
    assert out["seq_lens_decoder"].tolist() == [12] and out["seq_lens_this_time"].tolist() == [1]
    assert out["has_running"].tolist() == [True]


def test_truncation_at_the_first_end_token_which_is_kept():
    out = run_all(case([5, 3, 7]))
    assert out["accept_tokens"].tolist() == [[5, 3, -1, -1]] and out["accept_num"].tolist() == [2]
    assert out["token_ids_all"][0, 6:9].tolist() == [5, 3, 77]
    assert out["stop_flags"].tolist() == [True] and out["step_idx"].tolist() == [4]


def test_max_dec_len_turns_the_token_into_the_first_end_token_and_ends():
    out = run_all(case([5, 6, 7], step=2, max_dec=4))
    assert out["accept_tokens"].tolist() == [[5, END, -1, -1]] and out["step_idx"].tolist() == [4]
    assert out["token_ids_all"][0, 6:8].tolist() == [5, END]
    assert out["stop_flags"].tolist() == [True] and out["seq_lens_this_time"].tolist() == [0]


def test_max_dec_len_keeps_an_end_token_that_is_not_the_first():
    out = run_all(case([5, 3], step=2, max_dec=4))
    assert out["accept_tokens"][0, :2].tolist() == [5, 3]


def test_tokens_that_would_pass_L_are_not_written_and_end_the_request():
    out = run_all(case([5, 6, 7], L=8, prompt=4, step=2))  # room for positions 6 and 7 only
    assert out["token_ids_all"][0].tolist() == [77] * 6 + [5, 6]
    assert out["accept_tokens"].tolist() == [[5, 6, -1, -1]] and out["accept_num"].tolist() == [2]
    assert out["step_idx"].tolist() == [4] and out["stop_flags"].tolist() == [True]
    assert out["draft_tokens"][0, 0] == 6 and out["has_running"].tolist() == [False]


def test_full_history_keeps_nothing_and_ends_the_request():
    out = run_all(case([5], L=6, prompt=4, step=2))
    assert out["accept_num"].tolist() == [0] and out["stop_flags"].tolist() == [True]
    assert out["draft_tokens"][0, 0] == 40  # nothing kept: column 0 untouched


def test_out_of_range_prompt_lens_or_step_idx_write_nothing():
    for prompt, step in ((-1, 2), (25, 0), (4, -3)):
        arrays = case([5], L=20, prompt=prompt, step=step)
        out = run_all(arrays)
        np.testing.assert_array_equal(out["token_ids_all"], arrays["token_ids_all"])
        assert out["accept_num"].tolist() == [0] and out["stop_flags"].tolist() == [True]


def test_prefill_moves_to_decode():
    out = run_all(case([5], kind="prefill", step=0))
    assert out["seq_lens_encoder"].tolist() == [0] and out["seq_lens_decoder"].tolist() == [7]
    assert out["step_idx"].tolist() == [1] and out["token_ids_all"][0, 4] == 5
    assert out["seq_lens_this_time"].tolist() == [1] and out["draft_tokens"][0].tolist() == [5, -1, -1, -1]


def test_prefill_chunk_that_keeps_no_token_only_advances_the_decoder():
    arrays = case([], kind="prefill", step=0)
    arrays["seq_lens_decoder"][0] = 5
    out = run_all(arrays)
    assert out["seq_lens_encoder"].tolist() == [7] and out["seq_lens_decoder"].tolist() == [12]
    assert out["step_idx"].tolist() == [0] and out["seq_lens_this_time"].tolist() == [1]
    assert out["has_running"].tolist() == [True]


def test_decode_advances_the_decoder_by_the_tokens_kept():
    out = run_all(case([5, 3, 7]))
    assert out["seq_lens_decoder"].tolist() == [11]


def test_draft_tokens_column_0_gets_the_last_kept_token_and_drafts_are_cleared():
    out = run_all(case([5, 6]))
    assert out["draft_tokens"].tolist() == [[6, -1, -1, -1]]
    out = run_all(case([]))
    assert out["draft_tokens"].tolist() == [[40, -1, -1, -1]]


def test_ended_request_sets_stop_flags_and_zero_this_time_then_is_zeroed_next_call():
    arrays = case([5, END])
    out = run_all(arrays)
    assert out["stop_flags"].tolist() == [True] and out["seq_lens_this_time"].tolist() == [0]
    assert out["seq_lens_decoder"].tolist() == [11]  # lengths are zeroed at the next call
    again = run_all({**arrays, **{name: out[name] for name in UPDATE_OUTPUTS}})
    assert again["seq_lens_decoder"].tolist() == [0] and again["has_running"].tolist() == [False]


def test_accept_num_out_of_range_reads_at_most_k_plus_1():
    arrays = case([5, 6, 7, 8])
    arrays["accept_num"][0] = 40
    out = run_all(arrays)
    assert out["accept_num"].tolist() == [4] and out["step_idx"].tolist() == [6]
    arrays["accept_num"][0] = -3
    out = run_all(arrays)
    assert out["accept_num"].tolist() == [0] and out["step_idx"].tolist() == [2]


def test_has_running_is_any_slot_running_after_the_update():
    slots = [case([5], kind="blocked"), case([5, END]), case([5], kind="stopped")]
    batch = {name: np.concatenate([s[name] for s in slots]) for name in UPDATE_NAMES}
    batch["end_tokens"] = slots[0]["end_tokens"]
    assert run_all(batch)["has_running"].tolist() == [False]
    slots.append(case([5]))
    batch = {name: np.concatenate([s[name] for s in slots]) for name in UPDATE_NAMES}
    batch["end_tokens"] = slots[0]["end_tokens"]
    assert run_all(batch)["has_running"].tolist() == [True]


def test_empty_batch_has_no_running_slot():
    arrays = case([5])
    arrays = {name: v[:0] if name != "end_tokens" else v for name, v in arrays.items()}
    assert run_all(arrays)["has_running"].tolist() == [False]


def test_per_request_tensors_may_be_column_vectors():
    arrays = case([5, 6])
    for name in (
        "seq_lens_encoder",
        "seq_lens_decoder",
        "seq_lens_this_time",
        "step_idx",
        "stop_flags",
        "accept_num",
        "prompt_lens",
        "is_block_step",
        "max_dec_len",
    ):
        arrays[name] = arrays[name].reshape(-1, 1)
    out = run_op(arrays)
    assert out["step_idx"].shape == (1, 1) and out["step_idx"].tolist() == [[4]]
    assert_same(run_reference(arrays), out)


# --- bad inputs -------------------------------------------------------------


def bad(arrays: dict, name: str, value) -> dict:
    return {**arrays, name: value}


@pytest.mark.parametrize(
    "mutate, argument",
    [
        (lambda a: bad(a, "seq_lens_encoder", a["seq_lens_encoder"].astype(np.int64)), "seq_lens_encoder"),
        (lambda a: bad(a, "seq_lens_decoder", np.zeros(2, np.int32)), "seq_lens_decoder"),
        (lambda a: bad(a, "seq_lens_this_time", np.zeros((1, 2), np.int32)), "seq_lens_this_time"),
        (lambda a: bad(a, "step_idx", a["step_idx"].astype(np.int32)), "step_idx"),
        (lambda a: bad(a, "stop_flags", a["stop_flags"].astype(np.int32)), "stop_flags"),
        (lambda a: bad(a, "accept_tokens", a["accept_tokens"][0]), "accept_tokens"),
        (lambda a: bad(a, "accept_tokens", np.zeros((2, 4), np.int64)), "accept_tokens"),
        (lambda a: bad(a, "accept_num", np.zeros(1, np.int64)), "accept_num"),
        (lambda a: bad(a, "draft_tokens", np.zeros((1, 5), np.int64)), "draft_tokens"),
        (lambda a: bad(a, "token_ids_all", a["token_ids_all"].astype(np.int32)), "token_ids_all"),
        (lambda a: bad(a, "token_ids_all", a["token_ids_all"][0]), "token_ids_all"),
        (lambda a: bad(a, "prompt_lens", np.zeros(3, np.int64)), "prompt_lens"),
        (lambda a: bad(a, "is_block_step", np.zeros(1, np.int32)), "is_block_step"),
        (lambda a: bad(a, "max_dec_len", np.zeros(1, np.int32)), "max_dec_len"),
        (lambda a: bad(a, "end_tokens", np.zeros(0, np.int64)), "end_tokens"),
        (lambda a: bad(a, "end_tokens", np.zeros(1, np.int32)), "end_tokens"),
    ],
)
def test_bad_inputs_name_the_argument(mutate, argument):
    with pytest.raises(ops.FastspecArgumentError, match=f"'{argument}'"):
        run_op(mutate(case([5])))


def test_static_graph_build_and_run():
    arrays = case([5, 6])
    got = run_static(arrays, lambda feeds: ops.update_model_status(*(feeds[name] for name in UPDATE_NAMES)))
    assert_same(dict(zip(OUT_NAMES, got)), run_reference(arrays))

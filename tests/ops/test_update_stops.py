"""update_model_status's stops (docs/ops/update_model_status.md): a request's stop token ids and stop
sequences end its run inside the step's accepted tokens. The Paddle op and the bindings' CPU path against
the numpy reference, one test per rule, then random batches and bad tables."""

from __future__ import annotations

import numpy as np
import pytest

import fastspec.ops as ops
from fastspec.reference.sequences import table_sequences
from tests.helpers.static_graph import run_static
from tests.helpers.verify_update_cases import UPDATE_NAMES, random_update_case, slot_output
from tests.ops.test_update_model_status import END, OUT_NAMES, assert_same, case, run_all, run_op, run_reference


def with_stops(arrays: dict, ids=None, sequences=None, min_tokens=None) -> dict:
    """One slot's tables: ``ids`` its stop token ids, ``sequences`` its stop sequences (written -1 apart)."""
    if ids is not None:
        arrays["stop_token_ids"] = np.array([list(ids) or [-1]], np.int64)
    if sequences is not None:
        row = [t for s in sequences for t in (*s, -1)] or [-1]
        arrays["stop_sequences"] = np.array([row], np.int64)
    if min_tokens is not None:
        arrays["min_tokens"] = np.array([min_tokens], np.int64)
    return arrays


def kept(out: dict) -> list[int]:
    return out["accept_tokens"][0, : out["accept_num"][0]].tolist()


def test_a_stop_token_at_the_first_row_ends_the_run_there_and_is_kept():
    out = run_all(with_stops(case([5, 6, 7]), ids=[9, 5]))
    assert kept(out) == [5] and out["accept_tokens"][0].tolist() == [5, -1, -1, -1]
    assert out["stop_flags"].tolist() == [True] and out["step_idx"].tolist() == [3]
    assert out["token_ids_all"][0, 6:8].tolist() == [5, 77] and out["seq_lens_this_time"].tolist() == [0]
    assert out["draft_tokens"][0, 0] == 5 and out["has_running"].tolist() == [False]


def test_a_stop_token_at_the_last_row_keeps_the_whole_run():
    out = run_all(with_stops(case([5, 6, 7, 8]), ids=[8]))
    assert kept(out) == [5, 6, 7, 8] and out["stop_flags"].tolist() == [True]


def test_tables_that_match_nothing_change_nothing():
    plain = run_all(case([5, 6, 7]))
    out = run_all(with_stops(case([5, 6, 7]), ids=[9, 10], sequences=[[6, 5], [7, 7]], min_tokens=0))
    assert_same(out, plain)
    assert out["stop_flags"].tolist() == [False]


def test_a_stop_sequence_inside_the_run_ends_it_after_the_sequence():
    out = run_all(with_stops(case([5, 6, 7, 8]), sequences=[[6, 7]]))
    assert kept(out) == [5, 6, 7] and out["stop_flags"].tolist() == [True]
    assert out["token_ids_all"][0, 6:10].tolist() == [5, 6, 7, 77]


def test_a_stop_sequence_may_span_the_output_before_the_step():
    arrays = case([5, 6], prompt=4, step=2)
    arrays["token_ids_all"][0, 4:6] = [3, 9]  # the output so far: 3 9 (3 is an end token but only history here)
    out = run_all(with_stops(arrays, sequences=[[3, 9, 5]]))
    assert kept(out) == [5] and out["stop_flags"].tolist() == [True]


def test_a_stop_sequence_never_reaches_into_the_prompt():
    arrays = case([5, 6], prompt=4, step=1)  # prompt 77 77 77 77, output 77
    out = run_all(with_stops(arrays, sequences=[[77, 77, 5]]))
    assert kept(out) == [5, 6] and out["stop_flags"].tolist() == [False]
    out = run_all(with_stops(arrays, sequences=[[77, 5]]))  # the one output token does count
    assert kept(out) == [5] and out["stop_flags"].tolist() == [True]


def test_a_stop_sequence_counts_once_min_tokens_are_out():
    # step 2: the three 6s are output tokens 3, 4 and 5
    out = run_all(with_stops(case([6, 6, 6]), sequences=[[6]], min_tokens=4))
    assert kept(out) == [6, 6] and out["stop_flags"].tolist() == [True]
    out = run_all(with_stops(case([6, 6, 6]), sequences=[[6]], min_tokens=6))
    assert kept(out) == [6, 6, 6] and out["stop_flags"].tolist() == [False]


def test_an_occurrence_that_ends_before_min_tokens_never_counts():
    # 5 6 ends at output token 4 < 5; when 7 arrives the output no longer ends with it
    out = run_all(with_stops(case([5, 6, 7]), sequences=[[5, 6]], min_tokens=5))
    assert kept(out) == [5, 6, 7] and out["stop_flags"].tolist() == [False]


def test_stop_token_ids_end_the_request_whatever_min_tokens_says():
    # as end tokens do: process_logits bans both while fewer than min_tokens tokens are out
    out = run_all(with_stops(case([5, 6]), ids=[5], sequences=[], min_tokens=50))
    assert kept(out) == [5] and out["stop_flags"].tolist() == [True]


def test_the_first_of_several_stops_in_a_run_wins():
    arrays = with_stops(case([5, 6, 7, END]), ids=[7], sequences=[[5, 6], [6, 7]])
    out = run_all(arrays)
    assert kept(out) == [5, 6] and out["stop_flags"].tolist() == [True]
    out = run_all(with_stops(case([5, 6, 7, END]), ids=[7], sequences=[[6, 7]]))
    assert kept(out) == [5, 6, 7]
    out = run_all(with_stops(case([5, END, 7]), ids=[7]))  # an end token before a stop token
    assert kept(out) == [5, END]


def test_sequences_are_split_at_negative_entries_and_may_fill_the_row():
    arrays = case([4, 9, 6, 7])
    arrays["stop_sequences"] = np.array([[8, 8, -1, -2, 6, 7]], np.int64)  # 8 8, then 6 7 up to the row's end
    assert kept(run_all(arrays)) == [4, 9, 6, 7]
    assert run_all(arrays)["stop_flags"].tolist() == [True]
    arrays["stop_sequences"] = np.array([[9, 6, 7, -1, 4, 9]], np.int64)  # 4 9 comes first in the run
    assert kept(run_all(arrays)) == [4, 9]


def test_negative_entries_never_match_a_token():
    arrays = case([5, -1, 6])  # a caller's -1 within accept_num is written as given
    out = run_all(with_stops(arrays, ids=[-1], sequences=[]))
    assert kept(out) == [5, -1, 6] and out["stop_flags"].tolist() == [False]


def test_at_max_dec_len_a_stop_becomes_the_end_token_as_any_other_token():
    # as verify_draft_tokens writes it there: a step with drafts and one without end alike
    out = run_all(with_stops(case([5, 6], step=2, max_dec=4), sequences=[[5, 6]]))
    assert kept(out) == [5, END] and out["stop_flags"].tolist() == [True]
    out = run_all(with_stops(case([5, 6], step=2, max_dec=4), ids=[6]))
    assert kept(out) == [5, END]
    out = run_all(with_stops(case([5, 6], step=2, max_dec=4), ids=[5], sequences=[[5, 7]]))
    assert kept(out) == [5]  # before max_dec_len a stop keeps its token
    out = run_all(with_stops(case([5, 3], step=2, max_dec=4), ids=[3]))
    assert kept(out) == [5, 3]  # an end token is never replaced


def test_each_slot_reads_its_own_rows_of_the_tables():
    a = with_stops(case([5, 6, 7]), ids=[6, -1], sequences=[[9, 9]], min_tokens=0)
    b = with_stops(case([5, 6, 7]), ids=[-1, -1], sequences=[[5, 6]], min_tokens=9)
    batch = {name: np.concatenate([a[name], b[name]]) for name in a}
    batch["end_tokens"] = a["end_tokens"]
    out = run_all(batch)
    assert out["accept_num"].tolist() == [2, 3] and out["stop_flags"].tolist() == [True, False]


def test_stopped_blocked_and_prefill_slots_with_tables():
    for kind in ("stopped", "blocked", "inactive"):
        run_all(with_stops(case([5, 6], kind=kind), ids=[5], sequences=[[5]]))
    out = run_all(with_stops(case([5], kind="prefill", step=0), sequences=[[5]], min_tokens=1))
    assert kept(out) == [5] and out["stop_flags"].tolist() == [True]


def test_random_batches_stop_where_the_reference_does_and_exercise_the_stops():
    """Random batches with every table (planted stops among the accepted tokens and the output): the op equals
    the reference, and the stops do end runs early, within the run and spanning the output before it."""
    rng = np.random.default_rng(35)
    ended = shortened = spanning = 0
    for n in range(400):
        arrays = random_update_case(rng)
        if arrays["stop_token_ids"] is None or arrays["stop_sequences"] is None:
            continue
        expected = run_reference(arrays)
        assert_same(run_op(arrays), expected, f"case {n}")
        plain = run_reference({**arrays, "stop_token_ids": None, "stop_sequences": None})
        ended += int(np.sum(expected["stop_flags"] & ~plain["stop_flags"]))
        for b in np.flatnonzero(expected["accept_num"] < plain["accept_num"]):
            shortened += 1
            p, s, k = int(arrays["prompt_lens"][b]), int(arrays["step_idx"][b]), int(expected["accept_num"][b])
            output = slot_output(arrays["token_ids_all"][b], p, s, arrays["accept_tokens"][b], k)
            # the sequence that ended the run started before this step
            spanning += any(
                len(seq) > k and output[-len(seq) :] == seq for seq in table_sequences(arrays["stop_sequences"][b])
            )
    assert ended > 30 and shortened > 10 and spanning > 2, (ended, shortened, spanning)


def test_column_vector_min_tokens():
    arrays = with_stops(case([6, 6, 6]), sequences=[[6]], min_tokens=4)
    arrays["min_tokens"] = arrays["min_tokens"].reshape(-1, 1)
    assert kept(run_all(arrays)) == [6, 6]


def test_static_graph_with_stops():
    arrays = with_stops(case([5, 6, 7]), ids=[9], sequences=[[6, 7]], min_tokens=0)
    got = run_static(arrays, lambda feeds: ops.update_model_status(*(feeds.get(name) for name in UPDATE_NAMES)))
    assert_same(dict(zip(OUT_NAMES, got)), run_reference(arrays))


@pytest.mark.parametrize(
    "name, value",
    [
        ("stop_token_ids", np.array([[5]], np.int32)),
        ("stop_token_ids", np.array([[5], [6]], np.int64)),
        ("stop_token_ids", np.zeros((1, 0), np.int64)),
        ("stop_token_ids", np.array([5], np.int64)),
        ("stop_sequences", np.array([[5, -1]], np.float32)),
        ("stop_sequences", np.zeros((3, 2), np.int64)),
        ("stop_sequences", np.zeros((1, 0), np.int64)),
        ("min_tokens", np.array([1], np.int32)),
        ("min_tokens", np.array([1, 2], np.int64)),
    ],
)
def test_bad_tables_name_the_argument(name, value):
    with pytest.raises(ops.FastspecArgumentError, match=f"'{name}'"):
        run_op({**case([5]), name: value})

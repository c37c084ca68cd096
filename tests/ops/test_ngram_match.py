"""ngram_match: the Paddle op (and the bindings' CPU path) against the numpy reference."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import fastspec.ops as ops
from tests.helpers import ngram_harness as harness
from tests.helpers.ngram_cases import ARRAY_NAMES, repeat_slots, slot_kinds, spec_example
from tests.helpers.static_graph import run_static

run_op = partial(harness.run_paddle, "ngram_match")
run_reference = partial(harness.run_reference, "ngram_match")


def test_spec_example_drafts_the_prompt_continuation():
    arrays, attrs = spec_example()
    drafts, lens = run_op(arrays, attrs)
    assert lens.tolist() == [3]
    assert drafts.tolist() == [[40, 50, 60, -1]]  # column 0 untouched, then drafts, then -1


def test_no_match_keeps_only_the_base_token():
    arrays, attrs = spec_example()
    arrays["token_ids_all"][0, 6:10] = [1, 2, 3, 4]  # generated tokens appear nowhere else
    drafts, lens = run_op(arrays, attrs)
    assert lens.tolist() == [1]
    assert drafts.tolist() == [[40, -1, -1, -1]]


def test_query_is_the_last_generated_tokens_not_one_past_them():
    # The slot after the newest token holds a stale 50. The old layout's query
    # (offset step_idx + 1 - n) would read it and look up [30, 40, 50], drafting [60].
    arrays, attrs = spec_example()
    arrays["token_ids_all"][0, 10] = 50
    stale_query = arrays["token_ids_all"][0, 6 + 4 + 1 - 3 : 6 + 4 + 1]
    assert stale_query.tolist() == [30, 40, 50]
    drafts, lens = run_op(arrays, attrs)
    assert drafts[0, 1:3].tolist() == [50, 60] and lens.tolist() == [3]


def test_generated_tokens_are_searched_after_the_prompt():
    arrays, attrs = spec_example()
    tokens = arrays["token_ids_all"]
    tokens[0, :6] = [1, 2, 3, 4, 5, 6]
    tokens[0, 6:14] = [7, 8, 9, 11, 12, 7, 8, 9]  # the newest [7, 8, 9] also starts the output
    arrays["step_idx"][:] = 8
    arrays["max_dec_len"][:] = 100
    drafts, lens = run_op(arrays, attrs)
    assert drafts[0, 1:].tolist() == [11, 12, 7] and lens.tolist() == [4]


def test_min_ngram_size_is_honoured():
    arrays, attrs = spec_example()
    arrays["token_ids_all"][0, 6:10] = [1, 2, 3, 40]  # only a 1-gram ([40]) matches
    assert run_op(arrays, {**attrs, "min_ngram_size": 1})[1].tolist() == [3]
    assert run_op(arrays, {**attrs, "min_ngram_size": 2})[1].tolist() == [1]


def test_max_dec_len_limits_the_drafts():
    arrays, attrs = spec_example()
    arrays["max_dec_len"][:] = 6  # md = 6 - 4 - 1 = 1
    drafts, lens = run_op(arrays, attrs)
    assert drafts.tolist() == [[40, 50, -1, -1]] and lens.tolist() == [2]


def test_budget_keeps_base_tokens_of_later_slots():
    arrays, attrs = spec_example()
    arrays = repeat_slots(arrays, 3)
    # three decode slots, each would draft 2; budget 5 = 3 base tokens + 2 drafts
    drafts, lens = run_op(arrays, {**attrs, "token_budget": 5})
    assert lens.tolist() == [3, 1, 1]
    assert drafts[:, 1:].tolist() == [[50, 60, -1], [-1, -1, -1], [-1, -1, -1]]


def test_slot_kinds_prefill_untouched_inactive_cleared():
    arrays, attrs = spec_example()
    arrays = slot_kinds(arrays, fed=[7, 9, 9])
    arrays["draft_tokens"][:] = 99
    drafts, lens = run_op(arrays, attrs)
    assert lens.tolist() == [7, 3, 0]
    assert drafts.tolist() == [[99, 99, 99, 99], [99, 50, 60, -1], [99, -1, -1, -1]]


def test_per_request_tensors_may_be_column_vectors():
    arrays, attrs = spec_example()
    arrays = repeat_slots(arrays, 2)
    columns = {name: (value if value.ndim == 2 else value[:, None]) for name, value in arrays.items()}
    drafts, lens = run_op(columns, attrs)
    assert lens.shape == (2, 1)
    harness.assert_same((drafts, lens.reshape(-1)), run_reference(arrays, attrs))


@pytest.mark.parametrize("chunk", range(6))
def test_random_batches_match_the_reference(chunk):
    harness.check_random_batches("ngram_match", 1000 + chunk)


def test_long_contexts_use_threads_and_match_the_reference():
    harness.check_long_contexts("ngram_match", 7, count=3, batch=24, max_model_len=8192)


def test_full_buffer_and_empty_prompt():
    arrays, attrs = spec_example()
    tokens = np.tile(np.array([1, 2, 3, 4], np.int64), 4)[None]  # L = 16, all of it used
    arrays["token_ids_all"] = tokens
    for prompt_len in (0, 4, 12):
        arrays["prompt_lens"][:] = prompt_len
        arrays["step_idx"][:] = 16 - prompt_len
        arrays["max_dec_len"][:] = 100
        harness.assert_same(run_op(arrays, attrs), run_reference(arrays, attrs), f"prompt_len {prompt_len}")


@pytest.mark.parametrize(
    "prompt_len, step",
    [(-1, 4), (6, -1), (17, 0), (6, 11), (2**40, 4), (6, 2**62), (-(2**62), 2**62)],
)
def test_out_of_range_slot_values_give_no_drafts(prompt_len, step):
    arrays, attrs = spec_example()
    arrays["prompt_lens"][:] = prompt_len
    arrays["step_idx"][:] = step
    drafts, lens = run_op(arrays, attrs)
    assert lens.tolist() == [1] and drafts.tolist() == [[40, -1, -1, -1]]


def bad(arrays: dict, name: str, value) -> dict:
    return {**arrays, name: value}


@pytest.mark.parametrize(
    "mutate, argument",
    [
        (lambda a: bad(a, "prompt_lens", a["prompt_lens"].astype(np.int32)), "prompt_lens"),
        (lambda a: bad(a, "step_idx", a["step_idx"].astype(np.int32)), "step_idx"),
        (lambda a: bad(a, "draft_token_num", a["draft_token_num"].astype(np.int64)), "draft_token_num"),
        (lambda a: bad(a, "seq_lens_this_time", a["seq_lens_this_time"].astype(np.int64)), "seq_lens_this_time"),
        (lambda a: bad(a, "token_ids_all", a["token_ids_all"].astype(np.int32)), "token_ids_all"),
        (lambda a: bad(a, "token_ids_all", a["token_ids_all"][0]), "token_ids_all"),
        (lambda a: bad(a, "draft_tokens", a["draft_tokens"][0]), "draft_tokens"),
        (lambda a: bad(a, "draft_tokens", np.zeros((2, 4), np.int64)), "draft_tokens"),
        (lambda a: bad(a, "seq_lens_encoder", np.zeros(2, np.int32)), "seq_lens_encoder"),
        (lambda a: bad(a, "seq_lens_decoder", np.zeros((1, 2), np.int32)), "seq_lens_decoder"),
        (lambda a: bad(a, "max_dec_len", np.zeros((1, 1, 1), np.int64)), "max_dec_len"),
    ],
)
def test_bad_inputs_name_the_argument(mutate, argument):
    arrays, attrs = spec_example()
    with pytest.raises(ops.FastspecArgumentError, match=f"'{argument}'"):
        run_op(mutate(arrays), attrs)


@pytest.mark.parametrize(
    "attrs, attribute, error",
    [
        ({"max_ngram_size": 0}, "max_ngram_size", ValueError),
        ({"max_ngram_size": 2, "min_ngram_size": 3}, "min_ngram_size", ValueError),
        ({"max_ngram_size": 2, "min_ngram_size": 0}, "min_ngram_size", ValueError),
        ({"max_ngram_size": 2.0}, "max_ngram_size", TypeError),
        ({"max_ngram_size": 2, "token_budget": "4"}, "token_budget", TypeError),
    ],
)
def test_bad_attributes_name_the_attribute(attrs, attribute, error):
    arrays, _ = spec_example()
    with pytest.raises(error, match=attribute):
        run_op(arrays, attrs)


def test_static_graph_build_and_run():
    arrays, attrs = spec_example()
    arrays = repeat_slots(arrays, 2)
    arrays["token_ids_all"][1, 6:10] = [1, 2, 3, 4]
    got = run_static(arrays, lambda feeds: ops.ngram_match(*(feeds[name] for name in ARRAY_NAMES), **attrs))
    harness.assert_same(got, run_reference(arrays, attrs))

"""ngram_append (hybrid drafting): the Paddle op and the bindings' CPU path against the reference."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import fastspec.ops as ops
from tests.helpers import ngram_harness as harness
from tests.helpers.ngram_append_cases import ARRAY_NAMES, hybrid_example
from tests.helpers.ngram_cases import repeat_slots, slot_kinds
from tests.helpers.static_graph import run_static

run_op = partial(harness.run_paddle, "ngram_append")
run_reference = partial(harness.run_reference, "ngram_append")


def test_model_drafts_kept_and_ngram_continuation_appended():
    arrays, attrs = hybrid_example()
    drafts, lens = run_op(arrays, attrs)
    # extended generated [10, 20, 30] matches the prompt's start: continuation [40, 50]
    assert drafts.tolist() == [[20, 30, 40, 50, -1]] and lens.tolist() == [4]


def test_the_query_reaches_into_the_model_drafts():
    # Without the model draft the query [10, 20] would continue with 30; with it, [20, 99]
    # matches the prompt's second occurrence and continues with 7.
    arrays, attrs = hybrid_example()
    arrays["token_ids_all"][0, :7] = [10, 20, 30, 5, 20, 99, 7]
    arrays["draft_tokens"][0, 1] = 99
    drafts, lens = run_op(arrays, attrs)
    assert drafts.tolist() == [[20, 99, 7, -1, -1]] and lens.tolist() == [3]


def test_without_model_drafts_it_is_ngram_match():
    rng = np.random.default_rng(5)
    from tests.helpers.ngram_cases import random_case

    for _ in range(200):
        arrays, attrs = random_case(rng)
        arrays["seq_lens_this_time"] = np.where(arrays["seq_lens_encoder"] > 0, arrays["seq_lens_this_time"], 1).astype(
            np.int32
        )
        harness.assert_same(run_op(arrays, attrs), harness.run_reference("ngram_match", arrays, attrs))


def test_no_match_keeps_the_model_drafts():
    arrays, attrs = hybrid_example()
    arrays["draft_tokens"][0, 1:3] = [7777, 8888]
    arrays["seq_lens_this_time"][:] = 3
    drafts, lens = run_op(arrays, attrs)
    assert drafts.tolist() == [[20, 7777, 8888, -1, -1]] and lens.tolist() == [3]


def test_max_dec_len_limits_model_and_appended_drafts():
    arrays, attrs = hybrid_example()
    arrays["max_dec_len"][:] = 5  # md = 5 - 2 - 1 = 2: one model draft + one appended
    drafts, lens = run_op(arrays, attrs)
    assert drafts.tolist() == [[20, 30, 40, -1, -1]] and lens.tolist() == [3]
    arrays["max_dec_len"][:] = 3  # md = 0: even the model draft goes
    drafts, lens = run_op(arrays, attrs)
    assert drafts.tolist() == [[20, -1, -1, -1, -1]] and lens.tolist() == [1]
    arrays["max_dec_len"][:] = 100
    arrays["draft_token_num"][:] = 1  # md = 1: the model draft only
    drafts, lens = run_op(arrays, attrs)
    assert drafts.tolist() == [[20, 30, -1, -1, -1]] and lens.tolist() == [2]


def test_budget_trims_from_the_end():
    arrays, attrs = hybrid_example()
    arrays = repeat_slots(arrays, 3)
    # each slot: 1 base + 1 model + 2 appended = 4; budget 7 = 3 bases + 4 drafts
    drafts, lens = run_op(arrays, {**attrs, "token_budget": 7})
    assert lens.tolist() == [4, 2, 1]
    assert drafts[:, 1:].tolist() == [[30, 40, 50, -1], [30, -1, -1, -1], [-1, -1, -1, -1]]


def test_slot_kinds_prefill_untouched_inactive_cleared():
    arrays, attrs = hybrid_example()
    arrays = slot_kinds(arrays, fed=[7, 2, 2])
    drafts, lens = run_op(arrays, attrs)
    assert lens.tolist() == [7, 4, 0]
    assert drafts.tolist() == [[20, 30, 0, 0, 0], [20, 30, 40, 50, -1], [20, -1, -1, -1, -1]]


@pytest.mark.parametrize("chunk", range(4))
def test_random_batches_match_the_reference(chunk):
    harness.check_random_batches("ngram_append", 2000 + chunk)


def test_long_contexts_use_threads_and_match_the_reference():
    harness.check_long_contexts("ngram_append", 9, count=2, batch=16, max_model_len=4096)


@pytest.mark.parametrize("prompt_len, step", [(-1, 2), (7, -1), (17, 0), (7, 10), (2**40, 2)])
def test_out_of_range_slot_values_keep_model_drafts_and_append_nothing(prompt_len, step):
    arrays, attrs = hybrid_example()
    arrays["prompt_lens"][:] = prompt_len
    arrays["step_idx"][:] = step
    drafts, lens = run_op(arrays, attrs)
    assert lens.tolist() == [2] and drafts.tolist() == [[20, 30, -1, -1, -1]]


@pytest.mark.parametrize(
    "name, value",
    [
        ("draft_tokens", np.zeros((2, 5), np.int64)),
        ("seq_lens_this_time", np.zeros(1, np.int64)),
        ("step_idx", np.zeros(1, np.int32)),
        ("token_ids_all", np.zeros(16, np.int64)),
    ],
)
def test_bad_inputs_name_the_argument(name, value):
    arrays, attrs = hybrid_example()
    with pytest.raises(ops.FastspecArgumentError, match=f"ngram_append: .*'{name}'"):
        run_op({**arrays, name: value}, attrs)


@pytest.mark.parametrize(
    "attrs, attribute, error",
    [
        ({"max_ngram_size": 0}, "max_ngram_size", ValueError),
        ({"max_ngram_size": 2, "min_ngram_size": 3}, "min_ngram_size", ValueError),
        ({"max_ngram_size": 2, "token_budget": 1.5}, "token_budget", TypeError),
    ],
)
def test_bad_attributes_name_the_attribute(attrs, attribute, error):
    arrays, _ = hybrid_example()
    with pytest.raises(error, match=f"ngram_append: attribute '{attribute}'"):
        run_op(arrays, attrs)


def test_static_graph_build_and_run():
    arrays, attrs = hybrid_example()
    arrays = repeat_slots(arrays, 2)
    arrays["draft_tokens"][1, 1] = 4242
    got = run_static(arrays, lambda feeds: ops.ngram_append(*(feeds[name] for name in ARRAY_NAMES), **attrs))
    harness.assert_same(got, run_reference(arrays, attrs))

"""The anchored n-gram rule (docs/ops/ngram_match.md "Anchored drafting") in the numpy reference:
hand cases worked out from the rule, and ngram_anchor=None equal to the op without anchors."""

from __future__ import annotations

import numpy as np
import pytest

from fastspec import reference as ref
from tests.helpers.ngram_cases import ARRAY_NAMES, random_case

K = 3


def slot(prompt: list[int], generated: list[int], length: int = 32) -> dict[str, np.ndarray]:
    row = np.zeros((1, length), np.int64)
    row[0, : len(prompt)] = prompt
    row[0, len(prompt) : len(prompt) + len(generated)] = generated
    return {
        "token_ids_all": row,
        "prompt_lens": np.array([len(prompt)], np.int64),
        "step_idx": np.array([len(generated)], np.int64),
        "draft_token_num": np.array([K], np.int32),
        "draft_tokens": np.full((1, K + 1), -1, np.int64),
        "seq_lens_this_time": np.ones(1, np.int32),
        "seq_lens_encoder": np.zeros(1, np.int32),
        "seq_lens_decoder": np.ones(1, np.int32),
        "max_dec_len": np.array([1000], np.int64),
    }


def drafts_and_anchor(arrays, anchor: int, max_ngram_size: int = 2, **attrs):
    drafts, lens, anchors = ref.ngram_match(
        *(arrays[n] for n in ARRAY_NAMES),
        max_ngram_size=max_ngram_size,
        ngram_anchor=np.array([anchor], np.int64),
        **attrs,
    )
    return drafts[0, 1 : lens[0]].tolist(), int(anchors[0])


# The prompt repeats "1 2": the search always takes the leftmost "1 2" (position 0), while the
# text being copied is the second, longer one from position 5.
PROMPT = [1, 2, 9, 9, 9, 1, 2, 3, 4, 5, 6, 7, 8]


def test_the_search_sets_the_anchor_to_the_first_drafts_source():
    arrays = slot(PROMPT, [1, 2])
    assert drafts_and_anchor(arrays, -1) == ([9, 9, 9], 2)  # leftmost match: drafts from position 2


def test_a_copy_that_continues_keeps_its_anchor():
    # Last step drafted from position 7 ("3 4 5"); the slot then generated 3, 4 (one draft accepted,
    # then the correction 4 equals the source's next token): the copy continues at position 9.
    arrays = slot(PROMPT, [1, 2, 3, 4])
    assert drafts_and_anchor(arrays, 7) == ([5, 6, 7], 9)


def test_the_longest_agreeing_step_wins():
    # 1, 2 and 3 tokens generated since the anchor would each agree with a source of repeats; the
    # largest m (3) is taken.
    arrays = slot([5, 5, 5, 5, 5, 5, 5, 6, 7], [5, 5, 5])
    drafts, anchor = drafts_and_anchor(arrays, 2)
    assert anchor == 2 + 3 and drafts == [5, 5, 6]


def test_an_edit_breaks_the_anchor_and_the_search_takes_over():
    # Generated 3 then 0: 0 is not the source's next token (4), so the search runs on "3 0".
    arrays = slot(PROMPT + [3, 0, 11, 12, 13], [1, 2, 3, 0])
    assert drafts_and_anchor(arrays, 7) == ([11, 12, 13], len(PROMPT) + 2)


def test_a_prompt_source_stops_at_the_prompt_end():
    # The source reaches the prompt's end after "7 8": nothing left to copy there, so the search runs.
    arrays = slot(PROMPT, [6, 7, 8])
    drafts, anchor = drafts_and_anchor(arrays, 11)
    assert anchor != 13 and (drafts, anchor) == ([], -1)


@pytest.mark.parametrize("anchor", [-5, -1, 17, 18, 2**62, -(2**63)])
def test_out_of_range_anchors_fall_back_to_the_search(anchor):
    arrays = slot(PROMPT, [1, 2, 3, 4])  # 17 tokens known: 17 and beyond point into the future
    plain = ref.ngram_match(*(arrays[n] for n in ARRAY_NAMES), max_ngram_size=2)
    drafts, new_anchor = drafts_and_anchor(arrays, anchor)
    assert drafts == plain[0][0, 1 : plain[1][0]].tolist()
    assert new_anchor == 9  # the search's match "3 4" at 7..8: drafts from 9


def test_prefill_and_inactive_slots_reset_the_anchor():
    arrays = slot(PROMPT, [1, 2])
    arrays["seq_lens_encoder"][0] = 5
    assert drafts_and_anchor(arrays, 7)[1] == -1
    arrays = slot(PROMPT, [1, 2])
    arrays["seq_lens_decoder"][0] = 0
    assert drafts_and_anchor(arrays, 7)[1] == -1


def test_the_budget_trims_anchored_drafts_but_keeps_the_anchor():
    arrays = slot(PROMPT, [1, 2, 3, 4])
    assert drafts_and_anchor(arrays, 7, token_budget=2) == ([5], 9)


@pytest.mark.parametrize("op", ["ngram_match", "ngram_append"])
def test_no_anchor_argument_is_todays_op(op):
    rng = np.random.default_rng(77)
    for _ in range(200):
        arrays, attrs = random_case(rng)
        without = getattr(ref, op)(*(arrays[n] for n in ARRAY_NAMES), **attrs)
        minus_one = np.full(arrays["draft_tokens"].shape[0], -1, np.int64)
        with_none = getattr(ref, op)(*(arrays[n] for n in ARRAY_NAMES), **attrs, ngram_anchor=minus_one)
        np.testing.assert_array_equal(without[0], with_none[0])  # anchors all -1: the search alone
        np.testing.assert_array_equal(without[1], with_none[1])


def test_append_continues_through_agreeing_model_drafts():
    arrays = slot(PROMPT, [1, 2, 3, 4])
    arrays["draft_tokens"][0, 1] = 5  # the model drafted the source's next token
    arrays["seq_lens_this_time"][0] = 2
    drafts, lens, anchors = ref.ngram_append(
        *(arrays[n] for n in ARRAY_NAMES), max_ngram_size=2, ngram_anchor=np.array([7], np.int64)
    )
    assert drafts[0, 1 : lens[0]].tolist() == [5, 6, 7] and anchors.tolist() == [9]

"""process_logits on the CPU (Paddle op and bindings) against the numpy reference: random and
wild calls, chains and trees, the vocabulary and history sizes of a real model, each rule of
docs/ops/process_logits.md on a call built to show it, and the history rule itself (a row's
penalty counts the drafts before it, and only those)."""

from __future__ import annotations

import numpy as np
import paddle
import pytest

import fastspec.ops as ops
from tests.helpers import logits_cases as cases


def run_paddle(arrays: dict) -> np.ndarray:
    tensors = {name: None if value is None else paddle.to_tensor(value) for name, value in arrays.items()}
    result = ops.process_logits(*(tensors[name] for name in cases.NAMES))
    assert result is tensors["logits"]  # in place
    return tensors["logits"].numpy()


def test_random_and_wild_calls_match_the_reference_bit_for_bit():
    for i, arrays in enumerate(cases.cases(seed=3, count=300)):
        expected = cases.run_reference(arrays)
        cases.assert_bit_equal(cases.run_arrays(arrays), expected, f"bindings, case {i}")
        if i % 4 == 0:
            cases.assert_bit_equal(run_paddle(arrays), expected, f"paddle, case {i}")


@pytest.mark.parametrize("tree", [False, True])
def test_a_real_vocabulary_and_long_histories_match_the_reference(tree):
    rng = np.random.default_rng(17 + tree)
    arrays = cases.case(rng, b=6, k=5, vocab=151936, max_len=3000, tree=tree)
    arrays["token_ids_all"] = rng.integers(0, 2000, arrays["token_ids_all"].shape)  # repeats, as text has
    arrays["prompt_lens"] = np.array([1000, 0, 2990, 1500, 10, 2000], np.int64)
    arrays["step_idx"] = np.array([900, 5, 10, 1500, 0, 999], np.int64)
    arrays["repetition_penalty"][:] = 1.1
    cases.assert_bit_equal(cases.run_arrays(arrays), cases.run_reference(arrays))


def simple_call(vocab=8, prompt=(1, 2), output=(3,), drafts=(3,), rows=None, **values):
    """One request: the history and drafts given, rows for the committed token and each draft."""
    tokens = list(prompt) + list(output)
    history = np.array([tokens + [0] * 4], np.int64)
    rows = len(drafts) + 1 if rows is None else rows
    arrays = {
        "logits": np.ones((rows, vocab), np.float32),
        "token_ids_all": history,
        "prompt_lens": np.array([len(prompt)], np.int64),
        "step_idx": np.array([len(output)], np.int64),
        "draft_tokens": np.array([[tokens[-1] if tokens else 0, *drafts]], np.int64),
        "batch_id_per_token_output": np.zeros(rows, np.int32),
        "cu_seqlens_q_output": np.array([0, rows], np.int32),
        "repetition_penalty": np.ones(1, np.float32),
        "presence_penalty": np.zeros(1, np.float32),
        "frequency_penalty": np.zeros(1, np.float32),
        "min_tokens": np.zeros(1, np.int64),
        "end_tokens": np.array([vocab - 1], np.int64),
        "stop_token_ids": np.full((1, 1), -1, np.int64),
        "logit_bias_ids": np.full((1, 1), -1, np.int64),
        "logit_bias_values": np.zeros((1, 1), np.float32),
        "bad_words": np.full((1, 1), -1, np.int64),
        "draft_parents": None,
    }
    for name, value in values.items():
        arrays[name] = (
            None if value is None else np.asarray(value, arrays[name].dtype if arrays[name] is not None else np.int32)
        )
    return arrays


def processed(arrays):
    out = cases.run_arrays(arrays)
    cases.assert_bit_equal(out, cases.run_reference(arrays))
    return out


def test_each_row_counts_the_drafts_before_it():
    # output 3; drafts 3 3: the rows see 3 once, twice, three times
    out = processed(simple_call(drafts=(3, 3), frequency_penalty=[0.5]))
    assert out[:, 3].tolist() == [0.5, 0.0, -0.5]
    assert (np.delete(out, 3, axis=1) == 1).all()  # the prompt is not counted by frequency


def test_without_the_drafts_the_penalty_would_differ():
    """The history rule: the same logits judged without the drafts give another penalty at row 1."""
    arrays = simple_call(drafts=(5,), repetition_penalty=[2.0], presence_penalty=[0.25])
    with_drafts = processed(arrays)
    assert with_drafts[1, 5] == np.float32(1.0 / 2.0 - 0.25)  # draft 5 is in row 1's history
    assert with_drafts[0, 5] == 1.0  # not yet in row 0's
    alone = simple_call(drafts=(), output=(3,), repetition_penalty=[2.0], presence_penalty=[0.25])
    assert processed(alone)[0, 5] != with_drafts[1, 5]


def test_repetition_divides_positive_and_multiplies_other_logits():
    arrays = simple_call(repetition_penalty=[2.0], drafts=())
    arrays["logits"][0, [1, 2, 3]] = [4.0, -4.0, 0.0]
    out = processed(arrays)
    assert out[0, [1, 2, 3]].tolist() == [2.0, -8.0, 0.0]
    assert out[0, 4] == 1.0  # not in the history


def test_a_tree_row_sees_its_ancestors_only():
    # nodes 1 (5), 2 (6) under the root, 3 (6) under 1: row 3 sees 5 and 6, row 2 sees only 6
    arrays = simple_call(drafts=(5, 6, 6), frequency_penalty=[1.0], draft_parents=[[-1, 0, 0, 1]])
    out = processed(arrays)
    assert out[:, 5].tolist() == [1.0, 0.0, 1.0, 0.0]
    assert out[:, 6].tolist() == [1.0, 1.0, 0.0, 0.0]


def test_bias_adds_in_column_order_after_the_penalties():
    arrays = simple_call(
        drafts=(), repetition_penalty=[2.0], logit_bias_ids=[[3, 3, 4]], logit_bias_values=[[1.0, 0.5, -2.0]]
    )
    out = processed(arrays)
    assert out[0, 3] == 0.5 + 1.0 + 0.5 and out[0, 4] == -1.0


def test_bad_words_ban_their_last_token_after_the_rest_of_them():
    words = [[3, 6, -1, 5, -1, -1, 2, 7]]  # 3 then 6: the output ends with 3; 5 always; 2 7: 2 is in the prompt only
    out = processed(simple_call(drafts=(4,), bad_words=words))
    assert np.isneginf(out[0, [6, 5]]).all() and out[0, 7] == 1.0
    assert out[1, 6] == 1.0 and np.isneginf(out[1, 5])  # row 1's output ends with draft 4


def test_min_tokens_bans_end_and_stop_tokens_until_enough_are_out():
    arrays = simple_call(drafts=(4, 4), min_tokens=[3], stop_token_ids=[[2]])
    out = processed(arrays)  # one token out, then the drafts: rows have 1, 2 and 3 out
    assert np.isneginf(out[:2, [7, 2]]).all() and (out[2, [7, 2]] == 1.0).all()


def test_neutral_parameters_keep_every_bit():
    arrays = cases.case(np.random.default_rng(0), b=4, k=3, vocab=50, max_len=30, wild=True)
    for name, value in (("repetition_penalty", 1.0), ("presence_penalty", 0.0), ("frequency_penalty", 0.0)):
        arrays[name][:] = value
    arrays["logit_bias_ids"][:] = -1
    arrays["bad_words"][:] = -1
    arrays["min_tokens"][:] = 0
    cases.assert_bit_equal(cases.run_arrays(arrays), arrays["logits"])


def test_the_example_of_the_docs():
    arrays = simple_call(
        vocab=4,
        prompt=(3, 1),
        output=(2,),
        drafts=(2,),
        repetition_penalty=[2.0],
        frequency_penalty=[0.25],
        end_tokens=[0],
    )
    assert processed(arrays).tolist() == [[1.0, 0.5, 0.25, 0.5], [1.0, 0.5, 0.0, 0.5]]

"""model_inputs: the CPU kernel (pointer API) and the Paddle op against the numpy reference on random and edge
calls; the reference against the Paddle glue it replaced (build_model_inputs' tensor ops) on the packings
pack_rows writes; the rule by hand."""

from __future__ import annotations

import numpy as np
import paddle

import fastspec.arrays
import fastspec.ops as ops
from tests.helpers import model_inputs_cases as cases


def test_random_calls_match_the_reference():
    for i, (arrays, attrs) in enumerate(cases.cases(seed=41, count=300)):
        cases.assert_equal(cases.run_arrays(arrays, attrs), cases.run_reference(arrays, attrs), f"case {i}")


def test_paddle_op_matches_the_reference():
    for i, (arrays, attrs) in enumerate(cases.cases(seed=42, count=40)):
        result = ops.model_inputs(*(paddle.to_tensor(arrays[n]) for n in cases.NAMES))
        got = {name: getattr(result, name).numpy() for name in cases.OUTPUTS}
        cases.assert_equal(got, cases.run_reference(arrays, attrs), f"case {i}")


def old_glue(a: dict) -> dict[str, np.ndarray]:
    """build_model_inputs before the op, as Paddle ops."""
    t = {n: paddle.to_tensor(v) for n, v in a.items()}
    cu, k = t["cu_seqlens_q_output"], a["draft_tokens"].shape[1] - 1
    rows = (cu[1:] - cu[:-1]).astype("int64")
    start = t["prompt_lens"] + t["step_idx"]
    prefill = t["seq_lens_encoder"] > 0
    lengths = paddle.where(rows > 0, paddle.where(prefill, start, start + rows - 1), paddle.zeros_like(rows))
    columns = paddle.to_tensor(np.arange(a["token_ids_all"].shape[1], dtype=np.int64)[None, :])
    offset = columns - start.unsqueeze(-1)
    if k:
        drafts = paddle.take_along_axis(t["draft_tokens"], paddle.clip(offset, 0, k - 1) + 1, axis=1)
        in_window = paddle.logical_and(offset >= 0, offset < (rows - 1).unsqueeze(-1))
        in_window = paddle.logical_and(in_window, paddle.logical_not(prefill).unsqueeze(-1))
        tokens = paddle.where(in_window, drafts, t["token_ids_all"])
    else:
        tokens = t["token_ids_all"]
    row_slot = t["batch_id_per_token_output"]
    slot = paddle.clip(row_slot, min=0)
    index = paddle.arange(len(a["batch_id_per_token_output"]), dtype="int32") - paddle.gather(cu, slot)
    last = paddle.gather(start - 1, slot)
    row_pos = paddle.where(row_slot >= 0, last + index.astype("int64"), paddle.zeros_like(last))
    return {"tokens": tokens.numpy(), "lengths": lengths.numpy(), "row_pos": row_pos.numpy()}


def test_the_reference_does_what_the_old_glue_did():
    for i, (arrays, attrs) in enumerate(cases.cases(seed=43, count=60, wild=False)):
        cases.assert_equal(old_glue(arrays), cases.run_reference(arrays, attrs), f"case {i}")


def test_the_rule_by_hand():
    # slot 0 decodes with 2 drafts after 3 tokens; slot 1 prefills its 4 tokens; slot 2 has no rows
    got = fastspec.arrays.model_inputs(
        np.array([[1, 2, 3, -1, -1, -1], [4, 5, 6, 7, -1, -1], [8, -1, -1, -1, -1, -1]], np.int64),
        np.array([2, 4, 1], np.int64),
        np.array([1, 0, 0], np.int64),
        np.array([0, 4, 0], np.int32),
        np.array([[3, 5, 6], [7, 9, 9], [8, 9, 9]], np.int64),
        np.array([0, 3, 4, 4], np.int32),
        np.array([0, 0, 0, 1, -1], np.int32),
    )
    assert np.asarray(got.tokens).tolist() == [[1, 2, 3, 5, 6, -1], [4, 5, 6, 7, -1, -1], [8, -1, -1, -1, -1, -1]]
    assert np.asarray(got.lengths).tolist() == [5, 4, 0]
    assert np.asarray(got.row_pos).tolist() == [2, 3, 4, 3, 0]

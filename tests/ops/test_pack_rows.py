"""pack_rows: the CPU kernel (pointer API) and the Paddle op against the numpy reference on random and edge
calls; the reference against the Paddle glue it replaced (slot phases, the proposal's write, the prefix sums
and the row search); the rules by hand."""

from __future__ import annotations

import numpy as np
import paddle

import fastspec.arrays
import fastspec.ops as ops
from fastspec import reference as ref
from tests.helpers import pack_rows_cases as cases


def test_random_calls_match_the_reference():
    packed = 0
    for i, (arrays, attrs) in enumerate(cases.cases(seed=23, count=400)):
        got = cases.run_arrays(arrays, attrs)
        cases.assert_equal(got, cases.run_reference(arrays, attrs), f"case {i}")
        packed += int((got["batch_id_per_token_output"] >= 0).any())
    assert packed > 200  # most calls pack some rows


def test_paddle_op_matches_the_reference():
    for i, (arrays, attrs) in enumerate(cases.cases(seed=24, count=60)):
        t = {n: None if v is None else paddle.to_tensor(v) for n, v in arrays.items()}
        record = ops.pack_rows(*(t[n] for n in cases.NAMES)).step_record
        got = {n: t[n].numpy() for n in cases.OUTPUTS[:-1]} | {"step_record": record.numpy()}
        cases.assert_equal(got, cases.run_reference(arrays, attrs), f"case {i}")


def old_glue(arrays: dict) -> dict[str, np.ndarray]:
    """What the runtime ran before the op (SpecState.slot_phases, Proposer.write, pack_slot_rows and
    step_status.step_record), as Paddle ops."""
    t = {n: None if v is None else paddle.to_tensor(v) for n, v in arrays.items()}
    k = t["draft_tokens"].shape[1] - 1
    running = paddle.logical_not(paddle.logical_or(t["stop_flags"], t["is_block_step"]))
    prefill = paddle.logical_and(running, t["seq_lens_encoder"] > 0)
    decode = paddle.logical_and(running, paddle.logical_and(t["seq_lens_encoder"] == 0, t["seq_lens_decoder"] > 0))
    if t["proposal_lens"] is not None:
        lens = paddle.clip(t["proposal_lens"], 0, k) * decode.astype("int32")
        columns = paddle.to_tensor(np.arange(k, dtype=np.int32)[None, :])
        drafts = paddle.where(columns < lens.unsqueeze(-1), t["proposal_tokens"], paddle.full([1, 1], -1, "int64"))
        t["draft_tokens"] = paddle.concat([t["draft_tokens"][:, :1], drafts], axis=1)
        t["seq_lens_this_time"] = paddle.where(decode, lens + 1, t["seq_lens_this_time"] * prefill.astype("int32"))
    rows = paddle.where(decode, paddle.clip(t["seq_lens_this_time"], min=0), prefill.astype("int32"))
    cu = paddle.cumsum(paddle.concat([paddle.zeros([1], "int32"), rows]), axis=0).astype("int32")
    capacity = len(arrays["batch_id_per_token_output"])
    slot = paddle.searchsorted(cu[1:], paddle.arange(capacity, dtype="int32"), out_int32=True, right=True)
    slot_or_none = paddle.to_tensor(np.append(np.arange(len(arrays["stop_flags"])), -1).astype(np.int32))
    record = paddle.concat(
        [
            (cu[1:] - cu[:-1]).unsqueeze(-1).astype("int64"),
            decode.unsqueeze(-1).astype("int64"),
            t["draft_tokens"][:, 1:],
        ],
        axis=1,
    )
    return {
        "draft_tokens": t["draft_tokens"].numpy(),
        "seq_lens_this_time": t["seq_lens_this_time"].numpy(),
        "cu_seqlens_q_output": cu.numpy(),
        "batch_id_per_token_output": paddle.gather(slot_or_none, slot).numpy() if capacity else np.zeros(0, np.int32),
        "step_record": record.numpy(),
    }


def test_the_reference_does_what_the_old_glue_did():
    """On the values a runner makes (no sum past 2^31 - 1, where the old cumsum wrapped)."""
    for i, (arrays, attrs) in enumerate(cases.cases(seed=25, count=80, k=int(5))):
        arrays["seq_lens_this_time"] = np.clip(arrays["seq_lens_this_time"], -5, 100)
        if arrays["proposal_lens"] is not None:
            arrays["proposal_lens"] = np.clip(arrays["proposal_lens"], -3, 9)
        cases.assert_equal(old_glue(arrays), cases.run_reference(arrays, attrs), f"case {i}")


def test_the_rules_by_hand():
    # slot 0 decodes with 1 of its 2 drafts, 1 prefills, 2 is stopped, 3 decodes with a length past K
    arrays = {
        "stop_flags": np.array([False, False, True, False]),
        "is_block_step": np.array([False, False, False, False]),
        "seq_lens_encoder": np.array([0, 4, 0, 0], np.int32),
        "seq_lens_decoder": np.array([9, 0, 9, 3], np.int32),
        "draft_tokens": np.array([[1, 7, 7], [2, 7, 7], [3, 7, 7], [4, 7, 7]], np.int64),
        "seq_lens_this_time": np.array([3, 4, 3, 1], np.int32),
        "cu_seqlens_q_output": np.zeros(5, np.int32),
        "batch_id_per_token_output": np.zeros(8, np.int32),
        "proposal_tokens": np.array([[10, 11], [12, 13], [14, 15], [16, 17]], np.int64),
        "proposal_lens": np.array([1, 2, 2, 9], np.int32),
    }
    got = cases.run_arrays(arrays, {})
    assert got["draft_tokens"].tolist() == [[1, 10, -1], [2, -1, -1], [3, -1, -1], [4, 16, 17]]
    assert got["seq_lens_this_time"].tolist() == [2, 4, 0, 3]
    assert got["cu_seqlens_q_output"].tolist() == [0, 2, 3, 3, 6]
    assert got["batch_id_per_token_output"].tolist() == [0, 0, 1, 3, 3, 3, -1, -1]
    assert got["step_record"].tolist() == [[2, 1, 10, -1], [1, 0, -1, -1], [0, 0, -1, -1], [3, 1, 16, 17]]
    # without a proposal the drafts and seq_lens_this_time stay; a decode slot's rows are its seq_lens_this_time
    arrays["proposal_tokens"] = arrays["proposal_lens"] = None
    record = fastspec.arrays.pack_rows(*(arrays[n] for n in cases.NAMES)).step_record
    assert np.asarray(record)[:, 0].tolist() == [3, 1, 0, 1]
    assert ref.pack_rows(*(arrays[n] for n in cases.NAMES))[4].tolist() == np.asarray(record).tolist()

"""step_status: the CPU kernel (pointer API) and the Paddle op against the numpy reference on random and edge
calls; the reference against the Paddle glue it replaced (status_tensor's casts and concatenation); the rule by
hand."""

from __future__ import annotations

import numpy as np
import paddle

import fastspec.arrays
import fastspec.ops as ops
from tests.helpers import step_status_cases as cases


def test_random_calls_match_the_reference():
    for i, (arrays, attrs) in enumerate(cases.cases(seed=61, count=300)):
        cases.assert_equal(cases.run_arrays(arrays, attrs), cases.run_reference(arrays, attrs), f"case {i}")


def test_paddle_op_matches_the_reference():
    for i, (arrays, attrs) in enumerate(cases.cases(seed=62, count=40)):
        got = {"status": ops.step_status(*(paddle.to_tensor(arrays[n]) for n in cases.NAMES)).numpy()}
        cases.assert_equal(got, cases.run_reference(arrays, attrs), f"case {i}")


def test_per_request_tensors_may_be_columns():
    arrays, attrs = cases.case(np.random.default_rng(63), batch=4, k=3)
    columns = {n: v.reshape(-1, 1) if v.ndim == 1 else v for n, v in arrays.items()}
    cases.assert_equal(cases.run_arrays(columns, attrs), cases.run_reference(arrays, attrs))


def old_glue(a: dict) -> np.ndarray:
    """The status before the op, as Paddle ops."""
    t = {n: paddle.to_tensor(v) for n, v in a.items()}
    flags = paddle.stack(
        [
            t["accept_num"],
            t["stop_flags"].astype("int32"),
            t["is_block_step"].astype("int32"),
            t["seq_lens_encoder"],
            t["seq_lens_decoder"],
        ],
        axis=1,
    ).astype("int64")
    return paddle.concat([t["step_record"], flags[:, :1], t["accept_tokens"], flags[:, 1:]], axis=1).numpy()


def test_the_reference_does_what_the_old_glue_did():
    for i, (arrays, attrs) in enumerate(cases.cases(seed=64, count=60)):
        expected = cases.run_reference(arrays, attrs)["status"]
        assert np.array_equal(old_glue(arrays), expected.reshape(expected.shape[0], -1)), f"case {i}"


def test_the_rule_by_hand():
    # K = 1: slot 0 verified draft 7, kept 7 and 8 and runs on; slot 1 stopped after a prefill of 5
    got = fastspec.arrays.step_status(
        np.array([[2, 1, 7], [1, 0, -1]], np.int64),
        np.array([2, 1], np.int32),
        np.array([[7, 8], [4, -1]], np.int64),
        np.array([False, True]),
        np.array([False, False]),
        np.array([0, 0], np.int32),
        np.array([12, 5], np.int32),
    )
    assert np.asarray(got).reshape(2, -1).tolist() == [
        [2, 1, 7, 2, 7, 8, 0, 0, 0, 12],
        [1, 0, -1, 1, 4, -1, 1, 0, 0, 5],
    ]

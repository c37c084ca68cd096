"""adaptive_plan and adaptive_observe on the CPU (Paddle op and bindings) against the numpy
reference: random controller states, values the controller never makes, the rules of
docs/ops/adaptive.md one by one, and bad arguments."""

from __future__ import annotations

import numpy as np
import paddle
import pytest

import fastspec.ops as ops
from fastspec import reference as ref
from fastspec.core.errors import FastspecArgumentError
from fastspec.reference.adaptive import controller_rates
from tests.helpers import adaptive_cases as cases

OPS = ("adaptive_plan", "adaptive_observe")


def run_paddle(op: str, arrays: dict, attrs: dict) -> list[np.ndarray]:
    tensors = {name: paddle.to_tensor(value) for name, value in arrays.items()}
    result = getattr(ops, op)(*(tensors[name] for name in cases.names(op)), **attrs)
    for name, out in zip(cases.outputs(op), result):
        assert out is tensors[name]  # in place
    return [tensors[name].numpy() for name in cases.outputs(op)]


@pytest.mark.parametrize("op", OPS)
def test_random_and_wild_calls_match_the_reference_bit_for_bit(op):
    for i, (arrays, attrs) in enumerate(cases.cases(op, seed=11, count=150)):
        expected = cases.run_reference(op, arrays, attrs)
        cases.assert_bit_equal(op, cases.run_arrays(op, arrays, attrs), expected, f"bindings, case {i}")
        cases.assert_bit_equal(op, run_paddle(op, arrays, attrs), expected, f"paddle, case {i}")


@pytest.mark.parametrize("op", OPS)
def test_large_batches_match_the_reference(op):
    for arrays, attrs in cases.cases(op, seed=5, count=3, b=256, k=5) + cases.cases(op, seed=6, count=2, b=1, k=1):
        cases.assert_bit_equal(op, cases.run_arrays(op, arrays, attrs), cases.run_reference(op, arrays, attrs))


def plan_arrays(acceptance, found=None, cost=None, prior=0.6, **state):
    b, cols = np.shape(acceptance)
    arrays = {
        "acceptance": np.asarray(acceptance, np.float32),
        "found": np.ones(b, np.float32) if found is None else np.asarray(found, np.float32),
        "step_cost": np.ones(b * (cols + 1), np.float32) if cost is None else np.asarray(cost, np.float32),
        "rates": controller_rates(0.3, 0.2, prior),
        "seq_lens_encoder": np.zeros(b, np.int32),
        "stop_flags": np.zeros(b, bool),
        "is_block_step": np.zeros(b, bool),
        "probe_step": np.zeros(1, np.int64),
        "draft_token_num": np.zeros(b, np.int32),
        "worth": np.zeros((b, cols), np.float32),
        "ranking": np.zeros((b, cols), np.int32),
    }
    arrays.update({name: np.asarray(value, arrays[name].dtype) for name, value in state.items()})
    return arrays


def plan(arrays, probe_interval=0):
    expected = cases.run_reference("adaptive_plan", arrays, {"probe_interval": probe_interval})
    actual = cases.run_arrays("adaptive_plan", arrays, {"probe_interval": probe_interval})
    cases.assert_bit_equal("adaptive_plan", actual, expected)
    return dict(zip(cases.outputs("adaptive_plan"), actual))


def test_free_extra_rows_take_every_draft_with_a_chance():
    out = plan(plan_arrays([[1, 0.9, 0.5], [1, 0.1, 0.1], [0, 0.6, 0.6]]))  # flat cost: rows are free
    assert out["draft_token_num"].tolist() == [2, 2, 0]  # slot 2 does not decode: its drafts are worth 0


def test_a_steep_cost_takes_only_the_drafts_that_pay():
    # one row costs 1, each more row 0.5: slot 0's own token + draft 1 (0.9) -> 1.9 / 1.5 beats 1 / 1
    cost = 1 + 0.5 * np.arange(6)
    out = plan(plan_arrays([[1, 0.9, 0.1]], cost=cost))
    assert out["draft_token_num"].tolist() == [1]


def test_equal_estimates_rank_by_slot_and_the_ranking_is_a_permutation():
    out = plan(plan_arrays([[1, 0.6, 0.36]] * 3))
    worth = out["worth"].reshape(-1)
    assert sorted(out["ranking"].reshape(-1).tolist()) == list(range(9))
    assert out["ranking"].reshape(-1)[:3].tolist() == [0, 3, 6]  # own tokens: slot order
    assert np.all(np.diff(worth[out["ranking"].reshape(-1)]) <= 0)


@pytest.mark.parametrize("reversed_slots", [8, 40, 80, 256])
def test_near_equal_worths_against_slot_order_rank_exactly(reversed_slots):
    # 8 and 40 slots stay within the CPU insertion pass's budget (3072 moves here), 80 and 256 exceed
    # it and take the full radix sort (cases.rise_against_slot_order).
    rng = np.random.default_rng(reversed_slots)
    acceptance = rng.uniform(0.2, 0.95, (256, 6)).astype(np.float32)
    acceptance[:, 0] = 1.0
    cases.rise_against_slot_order(acceptance, reversed_slots)
    out = plan(plan_arrays(acceptance, cost=1e-3 * (1 + 0.01 * np.arange(256 * 7))))
    ranks = out["ranking"].reshape(-1)
    drafted = [b * 6 + 1 for b in reversed(range(reversed_slots))]
    position = {index: rank for rank, index in enumerate(ranks.tolist())}
    assert [position[i] for i in drafted] == sorted(position[i] for i in drafted)  # largest worth first


def test_probes_follow_the_counter_and_value_draft_one_at_the_prior():
    acceptance = [[1, 0.0, 0.0]] * 4
    out = plan(plan_arrays(acceptance, probe_step=[4]), probe_interval=2)  # step 5: slots 1 and 3 probe
    assert out["probe_step"].tolist() == [5]
    np.testing.assert_array_equal(out["worth"][:, 1] > 0.5, [False, True, False, True])
    assert out["draft_token_num"].tolist() == [0, 1, 0, 1]  # free rows: a probed draft pays


def test_prefilling_slots_add_a_row_each_to_the_step():
    # cost jumps after 2 rows: without the prefill, the own token and one draft fit; with it, none does
    cost = [1, 1, 10, 10, 10, 10, 10, 10]
    alone = plan(plan_arrays([[1, 0.9, 0.9], [0, 0.6, 0.6]], cost=cost))
    with_prefill = plan(plan_arrays([[1, 0.9, 0.9], [0, 0.6, 0.6]], cost=cost, seq_lens_encoder=[0, 7]))
    stopped = plan(
        plan_arrays([[1, 0.9, 0.9], [0, 0.6, 0.6]], cost=cost, seq_lens_encoder=[0, 7], stop_flags=[False, True])
    )
    assert alone["draft_token_num"].tolist() == [1, 0]
    assert with_prefill["draft_token_num"].tolist() == [0, 0]
    assert stopped["draft_token_num"].tolist() == [1, 0]


def observe(acceptance, found, planned, rows, kept, rates=(0.5, 0.2, 0.6)):
    arrays = {
        "acceptance": np.asarray(acceptance, np.float32),
        "found": np.asarray(found, np.float32),
        "draft_token_num": np.asarray(planned, np.int32),
        "cu_seqlens_q_output": np.concatenate([[0], np.cumsum(rows)]).astype(np.int32),
        "accept_num": np.asarray(kept, np.int32),
        "rates": controller_rates(*rates),
    }
    actual = cases.run_arrays("adaptive_observe", arrays, {})
    cases.assert_bit_equal("adaptive_observe", actual, cases.run_reference("adaptive_observe", arrays, {}))
    return actual


def test_observe_moves_tried_positions_relaxes_the_rest_and_skips_behind_a_rejection():
    acc, found = observe([[1, 0.5, 0.5, 0.5, 0.5]], [1.0], [3], [4], [2])  # offered 3, accepted 1
    np.testing.assert_allclose(acc[0], [1, 0.75, 0.25, 0.5, 0.5 * 0.8 + 0.2 * 0.6], rtol=1e-6)
    assert found.tolist() == [1.0]


def test_observe_a_slot_that_found_no_drafts_learns_only_found():
    acc, found = observe([[1, 0.5, 0.5]], [0.8], [2], [1], [1])
    np.testing.assert_array_equal(acc, [[1, 0.5, 0.5]])
    np.testing.assert_allclose(found, [0.4], rtol=1e-6)


def test_observe_a_prefill_row_starts_decoding_and_no_row_keeps_the_flag():
    acc, _ = observe([[0, 0.6, 0.6], [0, 0.6, 0.6]], [1, 1], [0, 0], [1, 0], [1, 0])
    assert acc[:, 0].tolist() == [1.0, 0.0]


@pytest.mark.parametrize("op", OPS)
def test_bad_arguments_name_the_op_and_the_argument(op):
    arrays, attrs = cases.cases(op, seed=1, count=1)[0]
    t = {name: paddle.to_tensor(value) for name, value in arrays.items()}

    def call(**changes):
        given = {**t, **changes}
        return getattr(ops, op)(*(given[name] for name in cases.names(op)), **attrs)

    b, cols = arrays["acceptance"].shape
    bad = {
        "acceptance": t["acceptance"].astype("float64"),
        "found": paddle.ones([b + 1], "float32"),
        "rates": paddle.ones([4], "float32"),
        "draft_token_num": paddle.zeros([b], "int64"),
    }
    for name, value in bad.items():
        with pytest.raises(FastspecArgumentError, match=f"{op}.*{name}"):
            call(**{name: value})
    with pytest.raises(FastspecArgumentError, match=f"{op}.*acceptance"):
        call(acceptance=paddle.ones([b, 1], "float32"))  # K = 0
    if op == "adaptive_plan":
        with pytest.raises(FastspecArgumentError, match=f"{op}.*probe_interval"):
            ops.adaptive_plan(*(t[name] for name in cases.names(op)), probe_interval=-1)
        with pytest.raises(FastspecArgumentError, match=f"{op}.*worth"):
            call(worth=paddle.zeros([2 * b, cols], "float32")[::2])  # a strided view: writes would be lost


def test_the_reference_rates_are_rounded_once_from_double():
    rates = controller_rates(0.3, 0.2, 0.6)
    assert rates.dtype == np.float32
    assert rates.tolist() == [
        np.float32(0.3),
        np.float32(1 - 0.3),
        np.float32(1 - 0.2),
        np.float32(0.2 * 0.6),
        np.float32(0.6),
    ]
    assert ref.adaptive_plan is not None and ref.adaptive_observe is not None

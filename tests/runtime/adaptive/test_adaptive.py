"""DraftLengthController: its decisions on hand-made acceptance histories and cost curves.

Expected draft counts are derived by hand (or by brute force over every choice of drafts), never
read back from the controller; step after step, its plan and observe are the numpy reference's.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import paddle
import pytest

from fastspec import reference as ref
from fastspec.runtime.adaptive.controller import DraftLengthController
from fastspec.runtime.adaptive.cost_model import RooflineCost
from fastspec.runtime.state import SpecState
from tests.helpers.runtime_cases import LineCost

K = 5


def controller(batch: int, cost, **kw) -> DraftLengthController:
    """A controller whose ``batch`` slots all decode (as after their prefill step)."""
    kw = {"learning_rate": 0.3, "relax_rate": 0.0, "prior": 0.6, "probe_interval": 0, **kw}
    ctl = DraftLengthController(batch, K, cost, place="cpu", **kw)
    ctl.acceptance[:, 0] = 1.0
    return ctl


def new_state(batch: int) -> SpecState:
    return SpecState(batch, 32, K, [0], "cpu")


def finish_step(ctl: DraftLengthController, state: SpecState, rows, kept) -> None:
    """What the runner leaves after a step: each slot's output rows and kept tokens; then observe."""
    cu = np.concatenate([[0], np.cumsum(rows)]).astype(np.int32)
    state.cu_seqlens_q_output[:] = paddle.to_tensor(cu)
    state.accept_num[:] = paddle.to_tensor(np.asarray(kept, dtype=np.int32))
    ctl.observe(state)


def step(ctl: DraftLengthController, state: SpecState, accepted) -> np.ndarray:
    """One step of decoding slots: plan; the proposer offers every planned draft; the target accepts
    ``accepted(planned)`` of them. Returns the planned counts."""
    ctl.plan(state)
    planned = state.draft_token_num.numpy().copy()
    finish_step(ctl, state, 1 + planned, 1 + np.minimum(np.asarray(accepted(planned)), planned))
    return planned


def set_estimates(ctl: DraftLengthController, conditional: np.ndarray) -> None:
    """Per slot, P(draft i accepted | drafts before it accepted) for i = 1..K."""
    rows = np.concatenate([np.ones((conditional.shape[0], 1)), conditional], axis=1).astype(np.float32)
    paddle.assign(paddle.to_tensor(rows), output=ctl.acceptance)


def best_counts_by_brute_force(worth: np.ndarray, cost) -> float:
    """The best expected tokens per second over every choice of draft counts (worth: [B, K])."""
    best = 0.0
    for counts in itertools.product(range(worth.shape[1] + 1), repeat=worth.shape[0]):
        tokens = sum(1 + worth[b, :c].sum() for b, c in enumerate(counts))
        best = max(best, tokens / float(cost.seconds(len(counts) + sum(counts))))
    return best


# -- one request, hand-derived ---------------------------------------------------------------

# cost(T) = 1 + 0.25 (T - 1): with drafts worth w1 >= w2 >= ... a lone request's rate with k
# drafts is (1 + w1 + ... + wk) / (1 + 0.25 k).
STEEP = LineCost(0.75, 0.25)


def test_fresh_request_takes_the_hand_derived_count():
    # prior 0.6: worth 0.6, 0.36, 0.216, ...: rates 1, 1.28, 1.307, 1.243, ... -> 2 drafts
    ctl = controller(1, STEEP)
    state = new_state(1)
    ctl.plan(state)
    assert state.draft_token_num.numpy().tolist() == [2]


def test_a_request_that_never_accepts_drops_to_zero_then_probes_then_comes_back():
    probe = 4
    ctl = controller(1, STEEP, probe_interval=probe)
    state = new_state(1)
    # the first probe lands on step 3 (slot 0's mark is rolled to the top every 4 steps)
    never = [step(ctl, state, lambda k: [0])[0] for _ in range(24)]
    # worth of draft 1 after n rejections: 0.6 * 0.7^n: 0.6 -> 2 drafts, 0.42 and 0.294 -> 1, then
    # below 0.25 -> none, except every 4th step, a probe: draft 1 is valued at the prior (0.6), draft 2
    # keeps its untried 0.6 (worth 0.36), rates 1.6 / 1.25, 1.96 / 1.5, 2.18 / 1.75 for 1, 2, 3
    # drafts -> 2 (a draft of the prior's worth pays on this curve; where it does not, see below)
    assert never[:3] == [2, 1, 1]
    assert never[3:] == [2 if (i + 1) % probe == 0 else 0 for i in range(3, 24)]
    # the text turns copy-heavy: the next probe is accepted and the drafts come back, up to K
    back = [step(ctl, state, lambda k: k)[0] for _ in range(24)]
    first = next(i for i, k in enumerate(back) if k > 0)
    assert first < probe
    assert all(k > 0 for k in back[first:])
    # drafts 1-4 become sure; draft 5 was never offered in this run, so it keeps the prior 0.6, worth
    # about as much as it costs here (rate 5.6 / 2.25 against 5 / 2): 4 or 5 drafts
    assert back[-1] >= K - 1


def test_a_probe_is_paid_for_like_any_draft():
    # cost 0.3 + 0.7 T, two slots: 2 tokens for 1.7, so a draft pays only when worth more than
    # 0.7 / 0.85 = 0.82. A probe values draft 1 at the prior (0.6), not as sure, so it is never
    # taken here; slot 1's draft 1 (0.9) is, with or without a probe
    ctl = controller(2, LineCost(0.3, 0.7), probe_interval=2)
    state = new_state(2)
    set_estimates(ctl, np.array([[0.1] * K, [0.9] + [0.1] * (K - 1)]))
    planned = [ctl.plan(state) or state.draft_token_num.numpy().tolist() for _ in range(6)]
    assert planned == [[0, 1]] * 6


def test_a_probe_where_drafts_are_cheap_is_taken():
    # same request, a step where a draft of the prior's worth pays (cost 1 + 0.25 (T - 1)): the
    # probe offers draft 1 (worth 0.6) and draft 2 behind it (0.1 * 0.6 does not pay): 1 draft,
    # once every 2 steps
    ctl = controller(1, STEEP, probe_interval=2)
    state = new_state(1)
    set_estimates(ctl, np.full((1, K), 0.1))
    planned = [ctl.plan(state) or int(state.draft_token_num.numpy()[0]) for _ in range(6)]
    assert sorted(planned) == [0, 0, 0, 1, 1, 1] and planned[0::2] != planned[1::2]


def test_without_probes_a_request_at_zero_stays_at_zero():
    ctl = controller(1, STEEP, probe_interval=0)
    state = new_state(1)
    history = [step(ctl, state, lambda k: [0])[0] for _ in range(8)]
    assert history[3:] == [0] * 5
    assert [step(ctl, state, lambda k: k)[0] for _ in range(8)] == [0] * 8  # nothing offered, nothing learnt


def test_untried_positions_relax_back_to_the_prior():
    ctl = controller(1, STEEP, relax_rate=0.5, probe_interval=0)
    state = new_state(1)
    for _ in range(6):
        step(ctl, state, lambda k: [0])
    low = ctl.expected_tokens()[0, 0]
    state.draft_token_num[:] = 0  # idle steps (no drafts planned): draft 1 moves halfway to 0.6 each step
    for _ in range(3):
        finish_step(ctl, state, [1], [1])
    assert ctl.expected_tokens()[0, 0] == pytest.approx(0.6 + (low - 0.6) * 0.125, rel=1e-5)


def test_drafts_planned_but_not_found_teach_nothing_about_acceptance():
    # the proposer had none of the planned drafts (one row): the estimates stay as they were,
    # neither rejected nor relaxed; only `found` learns
    ctl = controller(1, STEEP, relax_rate=0.5, probe_interval=0)
    state = new_state(1)
    set_estimates(ctl, np.array([[0.3, 0.9, 0.9, 0.9, 0.9]]))
    before = ctl.acceptance.numpy().copy()
    ctl.plan(state)
    assert state.draft_token_num.numpy()[0] > 0
    finish_step(ctl, state, [1], [1])
    np.testing.assert_array_equal(ctl.acceptance.numpy(), before)
    assert float(ctl.found.numpy()[0, 0]) == pytest.approx(0.7)


def test_positions_behind_a_rejected_draft_learn_nothing():
    ctl = controller(1, LineCost(1.0, 0.0))  # flat: every draft with a chance is taken
    state = new_state(1)
    step(ctl, state, lambda k: [1])  # 5 offered, the first accepted, the second rejected
    conditional = ctl.acceptance.numpy()[0, 1:]
    np.testing.assert_allclose(conditional, [0.6 + 0.3 * 0.4, 0.6 * 0.7, 0.6, 0.6, 0.6], rtol=1e-6)


# -- the batch and the cost curve --------------------------------------------------------------


@dataclass
class KneeCost:
    """Flat (1 second) up to ``knee`` tokens, then every token costs a full 1 / knee."""

    knee: int
    version: int = 0

    def seconds(self, tokens):
        return np.maximum(1.0, np.asarray(tokens, dtype=np.float64) / self.knee)

    def record(self, tokens, seconds):
        pass


def test_rows_the_proposer_leaves_empty_go_to_drafts_that_exist():
    # 2 slots, every estimate 0.9 (worth 0.9, 0.81, 0.73, 0.66, ...), 6 flat rows: 4 free drafts,
    # 2 per slot. Slot 0's proposer never has drafts: once the controller has learnt that, its
    # drafts book (almost) no rows and slot 1 takes all 4 free ones (a 5th, 0.59, does not pay)
    ctl = controller(2, KneeCost(6))
    state = new_state(2)
    set_estimates(ctl, np.full((2, K), 0.9))
    ctl.plan(state)
    assert state.draft_token_num.numpy().tolist() == [2, 2]
    for _ in range(12):  # slot 0 planned drafts and offered none; slot 1 offered and kept all
        ctl.plan(state)
        planned = state.draft_token_num.numpy()
        finish_step(ctl, state, [1, 1 + planned[1]], [1, 1 + planned[1]])
        set_estimates(ctl, np.full((2, K), 0.9))  # keep the acceptance fixed: only `found` moves
    ctl.plan(state)
    assert state.draft_token_num.numpy()[1] == 4
    assert ctl.found.numpy()[:, 0].tolist() == pytest.approx([0.7**12, 1.0], rel=1e-4)


ROOFLINE = RooflineCost.named("llama-3.1-8b", "h100-sxm")  # flat up to 295 tokens per step


def test_batch_one_on_the_roofline_takes_every_draft():
    ctl = controller(1, ROOFLINE)
    state = new_state(1)
    ctl.plan(state)
    assert state.draft_token_num.numpy().tolist() == [K]


def test_a_compute_bound_batch_takes_only_the_free_tokens():
    # 256 slots with fresh estimates (worth 0.6 first): the step is flat up to 295 tokens, so the
    # 39 free tokens go to draft 1 of the first 39 slots (equal estimates are ordered by slot);
    # past the ridge a draft must be worth ~0.94 tokens, which 0.6 is not
    ctl = controller(256, ROOFLINE)
    state = new_state(256)
    ctl.plan(state)
    planned = state.draft_token_num.numpy()
    assert planned.sum() == int(ROOFLINE.ridge_tokens) - 256 == 39
    np.testing.assert_array_equal(planned, [1] * 39 + [0] * (256 - 39))


def test_prefill_rows_take_their_share_of_the_free_tokens():
    # 256 slots, 200 of them prefilling (one row and one token each, no drafts), 56 decoding with
    # fresh estimates: the step already holds 256 rows, so only 295 - 256 = 39 drafts are free (not
    # 239), and past the ridge a draft must be worth ~0.94 tokens, as in a full decoding batch
    ctl = controller(256, ROOFLINE)
    state = new_state(256)
    prefill = np.arange(256) >= 56
    state.seq_lens_encoder[:] = paddle.to_tensor(np.where(prefill, 8, 0).astype(np.int32))
    state.stop_flags[:] = paddle.to_tensor(np.zeros(256, dtype=bool))
    ctl.acceptance[:, 0] = paddle.to_tensor((~prefill).astype(np.float32))
    ctl.plan(state)
    planned = state.draft_token_num.numpy()
    assert planned[56:].sum() == 0
    np.testing.assert_array_equal(planned[:56], [1] * 39 + [0] * 17)


def test_a_middle_batch_fills_the_free_tokens_by_worth():
    # 64 slots: 295 - 64 = 231 free drafts; worth 0.6 (64), 0.36 (64), 0.216 (64), then 0.13 (39 of 64)
    ctl = controller(64, ROOFLINE)
    state = new_state(64)
    ctl.plan(state)
    np.testing.assert_array_equal(state.draft_token_num.numpy(), [4] * 39 + [3] * 25)


def test_a_steeper_curve_takes_fewer_drafts():
    state = new_state(4)
    counts = []
    for slope in (0.0, 0.05, 0.25, 1.0):
        ctl = controller(4, LineCost(1.0 - slope, slope))
        set_estimates(ctl, np.full((4, K), 0.8))
        ctl.plan(state)
        counts.append(int(state.draft_token_num.numpy().sum()))
    assert counts[0] == 4 * K and counts[-1] == 0
    assert counts == sorted(counts, reverse=True) and len(set(counts)) == len(counts)


@pytest.mark.parametrize("seed", range(6))
def test_the_plan_is_the_best_split_of_the_step(seed):
    # brute force over every (k0, k1, k2) in [0, K]^3 against the controller's single sort
    rng = np.random.default_rng(seed)
    cost = LineCost(float(rng.uniform(0.2, 1.0)), float(rng.uniform(0.01, 0.4)))
    ctl = controller(3, cost)
    conditional = rng.uniform(0.05, 1.0, size=(3, K))
    set_estimates(ctl, conditional)
    state = new_state(3)
    ctl.plan(state)
    planned = state.draft_token_num.numpy()
    worth = np.cumprod(conditional, axis=1)
    rate = sum(1 + worth[b, :c].sum() for b, c in enumerate(planned)) / float(cost.seconds(3 + planned.sum()))
    assert rate == pytest.approx(best_counts_by_brute_force(worth, cost), rel=1e-5)


def test_a_new_request_drafts_after_its_prefill_and_a_free_slot_never():
    # steep curve: a lone decoding slot takes 2 drafts (see above); 4 slots where only slot 0 decodes
    ctl = controller(4, STEEP)
    state = new_state(4)
    ctl.reset_slot(1)  # a request arrives: its prefill runs this step
    ctl.reset_slot(2)  # a request left; the slot stays free
    ctl.reset_slot(3)
    ctl.plan(state)
    assert state.draft_token_num.numpy().tolist() == [2, 0, 0, 0]
    finish_step(ctl, state, [3, 1, 0, 0], [1, 1, 0, 0])  # slot 1's prefill row kept its first token
    np.testing.assert_allclose(ctl.acceptance.numpy()[1:, 1:], 0.6, rtol=1e-6)  # the prefill taught nothing
    ctl.plan(state)
    planned = state.draft_token_num.numpy()
    assert planned[1] > 0 and planned[2:].tolist() == [0, 0]


def test_reset_slot_forgets_the_previous_request():
    ctl = controller(2, STEEP)
    state = new_state(2)
    for _ in range(5):
        step(ctl, state, lambda k: [0, 0])
    ctl.found[1] = paddle.to_tensor([0.25])
    ctl.reset_slot(1)
    np.testing.assert_allclose(ctl.acceptance.numpy()[1], [0.0] + [0.6] * K, rtol=1e-6)  # prior, not decoding yet
    assert float(ctl.found.numpy()[1, 0]) == 1.0  # drafts assumed found until shown otherwise
    assert ctl.expected_tokens()[0, 0] < 0.6 * 0.7 + 1e-6  # slot 0 keeps its own history


def test_the_same_inputs_give_the_same_decisions():
    def run():
        ctl = controller(8, ROOFLINE, probe_interval=3, relax_rate=0.1)
        state = new_state(8)
        rng = np.random.default_rng(7)
        return [step(ctl, state, lambda k: rng.integers(0, k + 1)).tolist() for _ in range(12)]

    assert run() == run()


def test_buffers_are_written_in_place():
    ctl = controller(4, STEEP, probe_interval=2)
    state = new_state(4)
    tensors = [state.draft_token_num, ctl.acceptance, ctl.found, ctl._probe]
    pointers = [t.data_ptr() for t in tensors]
    for _ in range(3):
        step(ctl, state, lambda k: k // 2)
    assert [t.data_ptr() for t in tensors] == pointers


def test_the_step_methods_never_read_a_tensor_on_the_host(monkeypatch):
    ctl = controller(4, ROOFLINE, probe_interval=2, relax_rate=0.1)
    state = new_state(4)

    def refuse(*args, **kwargs):
        raise AssertionError("host read inside a step method")

    for name in ("numpy", "item", "tolist", "__bool__", "__int__", "__float__", "__index__", "__array__"):
        monkeypatch.setattr(paddle.Tensor, name, refuse, raising=False)
    for _ in range(3):
        ctl.plan(state)
        ctl.observe(state)


# -- the controller against the reference, step after step ------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_every_step_is_the_references(seed):
    """A controller run for 40 steps on random outcomes (prefills, stopped slots, drafts the proposer
    does not find, any accepted count): each plan and each observe gives the bits of the numpy
    reference on the controller's own state, so the controller passes its tensors to the ops as the
    contract says and the states it reaches (flags 0 / 1, estimates and found in [0, 1]) are covered."""
    rng = np.random.default_rng(seed)
    b = 6
    ctl = controller(b, ROOFLINE, probe_interval=3, relax_rate=0.2)
    state = new_state(b)

    def host(tensor):
        return tensor.numpy().copy()

    # each op's tensors by the reference's argument names (the schema's), written here, not taken from the code
    plan_tensors = {
        "acceptance": ctl.acceptance,
        "found": ctl.found,
        "step_cost": ctl._cost,
        "rates": ctl.rates,
        "seq_lens_encoder": state.seq_lens_encoder,
        "stop_flags": state.stop_flags,
        "is_block_step": state.is_block_step,
        "probe_step": ctl._probe,
        "draft_token_num": state.draft_token_num,
        "worth": ctl._worth,
        "ranking": ctl._ranking,
    }
    observe_tensors = {
        "acceptance": ctl.acceptance,
        "found": ctl.found,
        "draft_token_num": state.draft_token_num,
        "cu_seqlens_q_output": state.cu_seqlens_q_output,
        "accept_num": state.accept_num,
        "rates": ctl.rates,
    }
    for step_index in range(40):
        state.seq_lens_encoder[:] = paddle.to_tensor((rng.random(b) < 0.15).astype(np.int32) * 7)
        state.stop_flags[:] = paddle.to_tensor(rng.random(b) < 0.1)
        plan_inputs = {name: host(t) for name, t in plan_tensors.items()}
        want = ref.adaptive_plan(**plan_inputs, probe_interval=ctl.probe_interval)
        ctl.plan(state)
        got = [host(t) for t in (ctl._probe, state.draft_token_num, ctl._worth, ctl._ranking)]
        for name, g, w in zip(("probe_step", "draft_token_num", "worth", "ranking"), got, want):
            np.testing.assert_array_equal(g, w, err_msg=f"plan, step {step_index}: {name}")

        planned = got[1]
        offered = np.where(rng.random(b) < 0.7, planned, 0)  # the proposer finds some of the planned drafts
        running = ~host(state.stop_flags)
        rows = np.where(running, 1 + offered, 0)
        kept = np.where(running, 1 + rng.integers(0, offered + 1), 0)
        state.cu_seqlens_q_output[:] = paddle.to_tensor(np.concatenate([[0], np.cumsum(rows)]).astype(np.int32))
        state.accept_num[:] = paddle.to_tensor(kept.astype(np.int32))
        observe_inputs = {name: host(t) for name, t in observe_tensors.items()}
        want = ref.adaptive_observe(**observe_inputs)
        ctl.observe(state)
        np.testing.assert_array_equal(host(ctl.acceptance), want[0], err_msg=f"observe, step {step_index}")
        np.testing.assert_array_equal(host(ctl.found), want[1], err_msg=f"observe, step {step_index}")

"""EAGLE3 drafting and width-safe draft buffers.

- a head whose output width differs from its buffers gets a named error, buffers unchanged;
- the fused first step sees exactly the target's aux states (through the mixin); chained steps
  see the previous step's output;
- greedy / seeded TARGET_MATCH EAGLE3 output equals spec off; aux id L is the last layer.
"""

from __future__ import annotations

import numpy as np
import paddle
import pytest
from paddle import nn

from fastspec.demo.draft_models import GridAuxHiddenStates, ReplayAuxHiddenStates, ReplayEagle3Head
from fastspec.demo.models import ReplayModel, TinyTransformer
from fastspec.runtime.config import SpeculativeConfig
from fastspec.runtime.generation import generate
from fastspec.runtime.model_inputs import build_model_inputs
from fastspec.runtime.proposers import DraftModelProposer, DraftShapeError, Eagle3DraftHead
from tests.helpers.draft_helpers import RevealLayer, decode_state, observe_one_row_per_slot
from tests.helpers.runtime_cases import copy_task

V, MAX_LEN, LAYERS, IDS = 64, 64, 4, (1, 2, 4)  # MAX_LEN: decode_state's max_model_len


class NarrowingLayer(nn.Layer):
    """The issue's reproduction: a head that returns ``hidden[:, :2]`` whatever it was given."""

    def forward(self, input_ids, hidden):
        return RevealLayer()(input_ids, hidden[:, :2])[0], hidden[:, :2]


def snapshot(proposer) -> dict:
    return {name: (tensor, tensor.numpy().copy()) for name, tensor in proposer.buffers.items()}


def assert_unchanged(proposer, before: dict, names=("target_hidden", "hidden", "observed")) -> None:
    for name in names:
        tensor, values = before[name]
        assert proposer.buffers[name] is tensor, name
        np.testing.assert_array_equal(tensor.numpy(), values, err_msg=name)


@pytest.mark.parametrize("static", [False, True], ids=["eager", "static"])
def test_a_head_that_changes_the_width_gets_a_named_error_and_buffers_stay(static):
    state = decode_state([7, 8], 2)
    proposer = DraftModelProposer(NarrowingLayer(), 2, static=static)
    observe_one_row_per_slot(proposer, state, np.arange(12, dtype=np.float32).reshape(2, 6))
    before = snapshot(proposer)
    assert before["hidden"][0].shape == [2, 6]  # sized from the input width: no head declaration
    with pytest.raises(DraftShapeError, match=r"hidden output must have shape \[2, 6\].*got \[2, 2\]"):
        proposer(state)
    assert_unchanged(proposer, before)


def test_a_declared_output_width_sizes_the_chained_buffer():
    state = decode_state([7, 8], 2)
    proposer = DraftModelProposer(NarrowingLayer(), 2, hidden_size=2)
    observe_one_row_per_slot(proposer, state, np.arange(12, dtype=np.float32).reshape(2, 6))
    assert proposer.target_hidden.shape == [2, 6] and proposer.buffers["hidden"].shape == [2, 2]
    proposer(state)
    assert proposer.buffers["hidden"].shape == [2, 2]


def test_a_target_hidden_of_another_width_gets_a_named_error():
    state = decode_state([7, 8], 2)
    proposer = DraftModelProposer(RevealLayer(), 2)
    observe_one_row_per_slot(proposer, state, np.ones((2, 2), np.float32))
    proposer(state)
    before = snapshot(proposer)
    with pytest.raises(DraftShapeError, match=r"observe_target: hidden must be \[T, 2\].*got \[2, 6\]"):
        observe_one_row_per_slot(proposer, state, np.ones((2, 6), np.float32))
    assert_unchanged(proposer, before)
    with pytest.raises(DraftShapeError, match="2 slots, the state has 3"):
        proposer(decode_state([1, 2, 3], 2))


class RecordingEagle3Head(Eagle3DraftHead):
    """Keeps the hidden state each call was given and the one it returned."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.calls: list[tuple[np.ndarray, np.ndarray]] = []

    def forward(self, input_ids, hidden):
        logits, out = super().forward(input_ids, hidden)
        self.calls.append((hidden.numpy().copy(), out.numpy().copy()))
        return logits, out


def aux_target():
    model = TinyTransformer(V, MAX_LEN, n_layers=LAYERS, seed=1)
    return model, GridAuxHiddenStates(model, IDS)


def test_the_fused_step_sees_the_mixins_aux_states_and_chained_steps_the_previous_output():
    k = 3
    state = decode_state([7, 8, 9], k, step=3)
    state.pack_rows()  # one row per decode slot
    inputs, _ = build_model_inputs(state)
    model, target = aux_target()
    logits, hidden = target(inputs)
    # the rows handed over are the mixin's aux states at each row, concatenated, bit for bit
    _, grids = model.run(inputs)
    slot, pos = inputs.row_slot.numpy()[:3], inputs.row_pos.numpy()[:3]  # the packed rows; padding after them
    by_hand = np.concatenate([g.numpy()[slot, pos] for g in grids], axis=-1)
    d = model.tok.weight.shape[1]
    assert hidden.shape == [state.max_num_seqs * state.rows_per_slot, 3 * d]
    hidden = hidden[:3]
    np.testing.assert_array_equal(hidden.numpy(), by_hand)

    head = RecordingEagle3Head(V, d, num_aux=3, seed=2)
    proposer = DraftModelProposer(head, k)
    assert proposer.input_hidden_size == 3 * d and proposer.hidden_size == d  # from the head's declaration
    paddle.assign(paddle.ones([3], dtype="int32"), output=state.accept_num)
    proposer.observe_target(state, hidden)
    proposer(state)
    assert len(head.calls) == k
    first_in, first_out = head.calls[0]
    np.testing.assert_array_equal(first_in, by_hand)  # the fused step reads the aux states themselves
    for (given, _), (_, previous_out) in zip(head.calls[1:], head.calls[:-1]):
        assert given.shape == (3, d)
        np.testing.assert_array_equal(given, previous_out)  # chained: the previous step's output
    np.testing.assert_array_equal(proposer.buffers["hidden"].numpy(), head.calls[-1][1])


def test_aux_id_L_captures_the_last_layer_output():
    model = TinyTransformer(V, MAX_LEN, n_layers=LAYERS, seed=1)
    model.configure_aux_hidden_states((LAYERS,))
    state = decode_state([7, 8], 1)
    state.pack_rows()
    inputs, _ = build_model_inputs(state)
    logits, (last,) = model.run(inputs)
    packed = inputs.row_slot.numpy() >= 0
    rows = last.numpy()[inputs.row_slot.numpy()[packed], inputs.row_pos.numpy()[packed]]
    logits = logits[: int(packed.sum())]
    # the model's head over the final norm of that stream gives its logits: it is the last layer's output
    again = model.head(model.ln(paddle.to_tensor(rows)))
    np.testing.assert_allclose(again.numpy(), logits.numpy(), rtol=1e-5, atol=1e-5)


def eagle3_config(strategy: str, temperature: float, **kw) -> SpeculativeConfig:
    return SpeculativeConfig.from_dict(
        {
            "method": "eagle3",
            "num_speculative_tokens": 3,
            "verify_strategy": strategy,
            "aux_layer_ids": list(IDS),
            "sampling": {"max_dec_len": 30, "temperature": temperature, "top_p": 0.9},
            **kw,
        }
    )


@pytest.mark.parametrize("strategy, temperature", [("greedy", 0.0), ("target_match", 1.0)])
def test_eagle3_with_the_paddle_target_equals_spec_off(strategy, temperature):
    model, target = aux_target()
    prompts = [[5, 6, 7, 8], [9, 10, 11], [12, 13, 14, 15, 16], [17]]
    kw = dict(max_num_seqs=3, max_model_len=MAX_LEN, end_tokens=[0])
    config = eagle3_config(strategy, temperature)
    off = generate(target, prompts, config.replace(method="none", num_speculative_tokens=0), **kw)
    head = Eagle3DraftHead(V, model.tok.weight.shape[1], num_aux=len(IDS), seed=2)
    on = generate(target, prompts, config, draft_model=head, **kw)
    for a, b in zip(off.outputs, on.outputs):
        np.testing.assert_array_equal(a, b)
    assert on.stats.proposed_tokens > 0


@pytest.mark.parametrize("strategy, temperature", [("greedy", 0.0), ("target_match", 1.0)])
def test_eagle3_replay_stand_in_accepts_drafts_and_equals_spec_off(strategy, temperature):
    prompts, refs = copy_task(3, length=40, seed=0)
    target = ReplayAuxHiddenStates(ReplayModel(refs, V, end_token=0), IDS, num_layers=LAYERS)
    head = ReplayEagle3Head(refs, V, IDS, end_token=0, peak=0.9)
    kw = dict(max_num_seqs=2, end_tokens=[0])
    config = eagle3_config(strategy, temperature)
    off = generate(target, prompts, config.replace(method="none", num_speculative_tokens=0), **kw)
    on = generate(target, prompts, config, draft_model=head, **kw)
    for a, b in zip(off.outputs, on.outputs):
        np.testing.assert_array_equal(a, b)
    assert on.stats.mean_accepted_length > 2.0  # the fused aux states put the head on the reference

"""Runner: consistent statistics, and the replay model reaches a long mean accepted length."""

import numpy as np
import paddle
import pytest

from fastspec.demo.models import ReplayModel, TinyTransformer
from fastspec.runtime.config import SpeculativeConfig
from fastspec.runtime.generation import ModelInputs, generate
from tests.helpers.runtime_cases import copy_task

V = 64


def cfg(**kw):
    sampling = kw.pop("sampling", {})
    return SpeculativeConfig.from_dict({**kw, "sampling": {"max_dec_len": 80, **sampling}})


@pytest.mark.parametrize("strategy, temperature", [("greedy", 0.0), ("target_match", 1.0), ("topp", 1.0)])
def test_replay_model_mean_accepted_length_above_two(strategy, temperature):
    prompts, refs = copy_task(3)
    model = ReplayModel(refs, V, end_token=0)
    res = generate(
        model,
        prompts,
        cfg(
            method="ngram",
            num_speculative_tokens=5,
            verify_strategy=strategy,
            sampling={"temperature": temperature, "top_p": 0.9},
        ),
    )
    assert res.stats.mean_accepted_length > 2.0, res.stats.summary()
    for i, out in enumerate(res.outputs):  # top_p 0.9 keeps only the favoured token
        np.testing.assert_array_equal(out, refs[i] + [0])


def test_statistics_are_consistent():
    prompts, refs = copy_task(4, seed=1)
    model = ReplayModel(refs, V, end_token=0, peak=0.8)
    kw = dict(max_num_seqs=3, end_tokens=[0])
    sampling = {"temperature": 1.0, "top_p": 1.0}
    on = generate(
        model,
        prompts,
        cfg(method="ngram", num_speculative_tokens=4, verify_strategy="target_match", sampling=sampling),
        **kw,
    )
    off = generate(model, prompts, cfg(method="none", sampling=sampling), **kw)
    s = on.stats
    total = sum(len(o) for o in on.outputs)
    assert s.generated_tokens == total == s.accepted_tokens + s.bonus_tokens
    assert s.accepted_tokens == sum(s.accepted_per_position)
    assert s.proposed_tokens == sum(s.proposed_per_position) >= s.accepted_tokens
    # TARGET_MATCH is lossless token for token, so both runs produce the same tokens ...
    for a, b in zip(on.outputs, off.outputs):
        np.testing.assert_array_equal(a, b)
    # ... and the request-steps saved are exactly the difference in request-steps
    assert off.stats.steps_saved == 0 and off.stats.request_steps == total
    assert s.steps_saved == off.stats.request_steps - s.request_steps == total - s.request_steps
    # every step of a request gives one token of the target's own, except a step that ends on an accepted draft
    assert s.request_steps - len(prompts) <= s.bonus_tokens <= s.request_steps
    assert s.mean_accepted_length == pytest.approx(s.decode_tokens / s.decode_request_steps)
    assert s.steps < off.stats.steps
    assert s.wall_time > 0 and s.tokens_per_second > 0
    assert set(s.stage_time) == {"insert", "propose", "pack", "model", "sample", "collect"}
    assert sum(s.stage_time.values()) <= s.wall_time * 1.01


def test_model_sees_drafts_and_rows():
    """The packed rows: a prefill slot has one row at p - 1, a decode slot 1 + drafts rows."""
    seen = []

    class Spy:
        def __init__(self):
            self.replay = ReplayModel({0: [7, 8, 9, 7, 8, 9, 7, 8, 9]}, 16, end_token=0)

        def __call__(self, inputs: ModelInputs):
            packed = inputs.row_slot.numpy() >= 0  # the rows past the packed ones are padding
            assert packed[: packed.sum()].all()  # packed rows first
            seen.append(
                (
                    inputs.row_slot.numpy()[packed].tolist(),
                    inputs.row_pos.numpy()[packed].tolist(),
                    inputs.tokens.numpy()[0, : int(inputs.lengths.numpy()[0])].tolist(),
                )
            )
            return self.replay(inputs)

    res = generate(
        Spy(),
        [[7, 8, 9, 7, 8]],
        cfg(
            method="ngram",
            num_speculative_tokens=2,
            verify_strategy="greedy",
            sampling={"temperature": 0.0, "max_dec_len": 12},
        ),
    )
    assert seen[0] == ([0], [4], [7, 8, 9, 7, 8])  # prefill
    assert seen[1][0] == [0, 0, 0] and seen[1][1] == [5, 6, 7]  # decode: base + 2 drafts
    assert seen[1][2] == [7, 8, 9, 7, 8, 7, 8, 9]  # committed tokens, then the drafts
    assert res.outputs[0].tolist() == [7, 8, 9, 7, 8, 9, 7, 8, 9, 0]


def test_more_prompts_than_slots_and_transformer_runs():
    model = TinyTransformer(V, max_len=40, seed=1)
    prompts = [[5, 6, 7], [8, 9], [10, 11, 12, 13], [14]]
    sampling = {"temperature": 0.0, "max_dec_len": 10}
    spec = cfg(method="ngram", num_speculative_tokens=3, verify_strategy="greedy", sampling=sampling)
    res = generate(model, prompts, spec, max_num_seqs=2, max_model_len=40)
    assert all(1 <= len(o) <= 10 for o in res.outputs)
    assert res.stats.generated_tokens == sum(len(o) for o in res.outputs)


def test_mtp_needs_a_draft_model():  # the mtp path itself: tests/runtime/test_mtp_runner.py
    with pytest.raises(ValueError, match="mtp"):
        generate(ReplayModel({}, V), [[3, 4]], cfg(method="mtp", num_speculative_tokens=1))


def test_replay_model_puts_peak_on_the_reference_token():
    model = ReplayModel({0: [5, 6, 7]}, V, end_token=0, peak=0.9, seed=3)
    inputs = ModelInputs(
        tokens=paddle.zeros([1, 8], "int64"),
        lengths=paddle.to_tensor([6], "int64"),
        row_slot=paddle.to_tensor([0, 0, 0, 0], "int32"),
        row_pos=paddle.to_tensor([2, 3, 4, 5], "int64"),
        prompt_lens=paddle.to_tensor([3], "int64"),
        request_ids=[0],
    )
    probs = paddle.nn.functional.softmax(model(inputs), axis=-1).numpy()
    np.testing.assert_allclose(probs[[0, 1, 2, 3], [5, 6, 7, 0]], 0.9, rtol=1e-5)  # past the end: the end token
    again = paddle.nn.functional.softmax(model(inputs), axis=-1).numpy()
    np.testing.assert_array_equal(probs, again)  # a pure function of its inputs
    assert len(np.unique(probs[0].round(8))) > V // 2  # the rest is spread, not uniform

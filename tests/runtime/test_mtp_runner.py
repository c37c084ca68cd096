"""End to end: the runner with draft-model speculation (method mtp) against spec off."""

from __future__ import annotations

import numpy as np
import pytest

from fastspec.demo.draft_models import GridHiddenStates, ReplayDraftHead, ReplayHiddenStates, TinyDraftHead
from fastspec.demo.models import ReplayModel, TinyTransformer
from fastspec.runtime.config import SpeculativeConfig
from fastspec.runtime.generation import generate
from fastspec.runtime.proposers import DraftModelProposer, ExtractHiddenStatesProposer
from tests.helpers.runtime_cases import copy_task

V = 64


def cfg(**kw):
    sampling = kw.pop("sampling", {})
    return SpeculativeConfig.from_dict({**kw, "sampling": {"max_dec_len": 40, "temperature": 0.0, **sampling}})


def assert_same_outputs(a, b):
    assert len(a.outputs) == len(b.outputs)
    for x, y in zip(a.outputs, b.outputs):
        np.testing.assert_array_equal(x, y)


def assert_consistent(stats, outputs):
    assert stats.generated_tokens == sum(len(o) for o in outputs) == stats.accepted_tokens + stats.bonus_tokens
    assert stats.proposed_tokens == sum(stats.proposed_per_position) >= stats.accepted_tokens
    assert stats.accepted_tokens == sum(stats.accepted_per_position)


@pytest.mark.parametrize("static", [False, True], ids=["eager", "static"])
def test_tiny_draft_head_with_the_paddle_target_is_lossless_under_greedy(static):
    max_len = 48
    target = GridHiddenStates(TinyTransformer(V, max_len, seed=1))
    prompts = [[5, 6, 7, 8], [9, 10, 11], [12, 13, 14, 15, 16], [17]]
    kw = dict(max_num_seqs=3, max_model_len=max_len, end_tokens=[0])
    off = generate(target, prompts, cfg(method="none"), **kw)
    config = cfg(method="mtp", num_speculative_tokens=3, verify_strategy="greedy")
    proposer = DraftModelProposer(TinyDraftHead(V, 64, seed=2), 3, static=static)
    on = generate(target, prompts, config, proposer=proposer, **kw)
    assert_same_outputs(on, off)
    assert_consistent(on.stats, on.outputs)
    assert on.stats.proposed_tokens > 0
    summary = on.stats.summary()
    assert {"mean_accepted_length", "draft_acceptance_rate", "acceptance_per_position"} <= set(summary)


def replay_setup(n=3, seed=0):
    prompts, refs = copy_task(n, length=40, seed=seed)
    target = ReplayHiddenStates(ReplayModel(refs, V, end_token=0))
    return prompts, refs, target


def run_replay(config, chained=True, steps=None, **kw):
    prompts, refs, target = replay_setup()
    head = ReplayDraftHead(refs, V, end_token=0, peak=0.9)
    proposer = DraftModelProposer.from_config(
        config, head, chain_hidden_states=chained, **({"num_model_steps": steps} if steps else {})
    )
    return generate(target, prompts, config, proposer=proposer, end_tokens=[0], **kw)


def test_chained_hidden_states_draft_further_than_unchained():
    config = cfg(method="mtp", num_speculative_tokens=4, verify_strategy="greedy", sampling={"max_dec_len": 50})
    prompts, refs, target = replay_setup()
    off = generate(target, prompts, cfg(method="none", sampling={"max_dec_len": 50}), end_tokens=[0])
    chained, unchained = run_replay(config, True), run_replay(config, False)
    assert_same_outputs(chained, off)
    assert_same_outputs(unchained, off)
    assert chained.stats.mean_accepted_length > 2.5, chained.stats.summary()
    # unchained: every step reads the target's hidden state, so steps >= 1 repeat position k + 1
    assert chained.stats.acceptance_per_position[1] > 0.5 > unchained.stats.acceptance_per_position[1]
    assert chained.stats.mean_accepted_length > unchained.stats.mean_accepted_length


def test_hybrid_drafts_and_config_keys():
    config = cfg(
        method="mtp",
        num_speculative_tokens=4,
        num_model_steps=1,
        verify_strategy="greedy",
        sampling={"max_dec_len": 50},
    )
    prompts, refs, target = replay_setup()
    off = generate(target, prompts, cfg(method="none", sampling={"max_dec_len": 50}), end_tokens=[0])
    on = run_replay(config)
    assert_same_outputs(on, off)
    assert_consistent(on.stats, on.outputs)
    assert on.stats.proposed_per_position[3] > 0  # n-gram columns were filled
    assert on.stats.mean_accepted_length > 2.0


def test_generate_builds_the_proposer_from_the_config():
    prompts, refs, target = replay_setup()
    config = cfg(method="mtp", num_speculative_tokens=2, verify_strategy="target_match")
    on = generate(target, prompts, config, draft_model=ReplayDraftHead(refs, V), end_tokens=[0])
    off = generate(target, prompts, cfg(method="none"), end_tokens=[0])
    assert_same_outputs(on, off)
    with pytest.raises(ValueError, match="hidden states"):
        generate(ReplayModel(refs, V), prompts, config, draft_model=ReplayDraftHead(refs, V), end_tokens=[0])


@pytest.mark.parametrize("strategy", ["rejection", "block"])
def test_rejection_is_greedy_at_temperature_zero_and_runs_sampled(strategy):
    prompts, refs, target = replay_setup()
    head = ReplayDraftHead(refs, V, peak=0.8)
    config = cfg(method="mtp", num_speculative_tokens=3, verify_strategy=strategy)
    off = generate(target, prompts, cfg(method="none"), end_tokens=[0])
    on = generate(target, prompts, config, draft_model=head, end_tokens=[0])
    assert_same_outputs(on, off)  # p one-hot: accept iff draft == argmax, else the residual is the argmax
    assert on.stats.accepted_tokens > 0
    sampled = config.replace(sampling={"temperature": 1.0, "top_p": 0.9})
    res = generate(target, prompts, sampled, draft_model=head, end_tokens=[0])
    assert_consistent(res.stats, res.outputs)
    assert res.stats.mean_accepted_length > 1.5


def test_extract_hidden_states_through_the_runner():
    max_len = 40
    target = GridHiddenStates(TinyTransformer(V, max_len, seed=3))
    prompts = [[5, 6, 7], [8, 9], [10, 11, 12, 13]]
    proposer = ExtractHiddenStatesProposer(1)
    config = cfg(method="mtp", num_speculative_tokens=1, verify_strategy="greedy", sampling={"max_dec_len": 8})
    on = generate(target, prompts, config, proposer=proposer, max_num_seqs=2, max_model_len=max_len, end_tokens=[0])
    off = generate(
        target,
        prompts,
        cfg(method="none", sampling={"max_dec_len": 8}),
        max_num_seqs=2,
        max_model_len=max_len,
        end_tokens=[0],
    )
    assert_same_outputs(on, off)
    for request, out in enumerate(on.outputs):
        records = proposer.records[request]
        tokens = np.concatenate([t for t, _ in records])
        hidden = np.concatenate([h for _, h in records])
        np.testing.assert_array_equal(tokens, out)  # one hidden state per committed token, in order
        assert hidden.shape == (len(out), 64)

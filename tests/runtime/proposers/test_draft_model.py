"""DraftModelProposer: chained vs unchained inputs, eager vs static, buffers, hybrid, probabilities."""

from __future__ import annotations

import numpy as np
import paddle
import pytest

from fastspec.runtime.proposers.draft_model import DraftModelProposer
from tests.helpers.draft_helpers import RevealLayer, decode_state, expected_drafts, observe_one_row_per_slot

BASES = [7, 42, 13]
TARGET_H = [3, 5, 8]


def proposer_with_target(
    k: int, steps: int, chained: bool, static: bool, state, keep_probs: bool = False
) -> DraftModelProposer:
    proposer = DraftModelProposer(
        RevealLayer(), k, num_model_steps=steps, chain_hidden_states=chained, static=static, keep_draft_probs=keep_probs
    )
    # the target's hidden state of each slot's last committed token, via observe_target
    b = state.max_num_seqs
    hidden = np.zeros((b, 2), np.float32)
    hidden[:, 0] = TARGET_H[:b]
    hidden[:, 1] = 0.5
    observe_one_row_per_slot(proposer, state, hidden)
    return proposer


@pytest.mark.parametrize("static", [False, True], ids=["eager", "static"])
@pytest.mark.parametrize("chained", [True, False], ids=["chained", "unchained"])
def test_each_step_sees_the_expected_inputs(chained, static):
    k = 4
    state = decode_state(BASES, k)
    proposer = proposer_with_target(k, k, chained, static, state)
    for _ in range(3):  # replays after the first keep reading the buffers the previous ones wrote
        proposal = proposer(state)
        drafts = proposal.tokens.numpy()
        for b, (base, h) in enumerate(zip(BASES, TARGET_H)):
            assert drafts[b].tolist() == expected_drafts(base, h, k, chained), f"slot {b}"
        assert proposal.lens.numpy().tolist() == [k] * 3
        assert state.seq_lens_this_time.numpy().tolist() == [k + 1] * 3
        assert state.draft_tokens.numpy()[:, 1:].tolist() == drafts.tolist()


def test_buffers_are_persistent_and_written_in_place():
    k = 3
    state = decode_state(BASES, k)
    proposer = proposer_with_target(k, k, True, True, state)
    proposer(state)
    buffers = dict(proposer.buffers)
    addresses = {name: t.data_ptr() for name, t in buffers.items()}
    # a new target hidden and new base tokens: the captured step must see them through the buffers
    state.draft_tokens[:, 0] = paddle.to_tensor(np.array([1, 2, 3], np.int64))
    hidden = np.array([[9, 0], [1, 0], [2, 0]], np.float32)
    proposer.observe_target(state, paddle.to_tensor(hidden))
    drafts = proposer(state).tokens.numpy()
    assert drafts.tolist() == [expected_drafts(base, h, k, True) for base, h in zip([1, 2, 3], [9, 1, 2])]
    assert all(proposer.buffers[name] is buffers[name] for name in buffers)
    assert {name: t.data_ptr() for name, t in proposer.buffers.items()} == addresses
    # after the chained steps the hidden buffer holds the target hidden + steps (written in place)
    np.testing.assert_array_equal(proposer.buffers["hidden"].numpy()[:, 0], [9 + k, 1 + k, 2 + k])


def test_observe_target_takes_the_row_of_the_last_committed_token():
    state = decode_state(BASES, 2)
    proposer = DraftModelProposer(RevealLayer(), 2)
    # slot 0: rows 0..2 with 2 committed -> row 1; slot 1: no rows, 0 committed -> keeps old; slot 2: rows 3..5, 3 -> row 5
    paddle.assign(paddle.to_tensor(np.array([0, 3, 3, 6], np.int32)), output=state.cu_seqlens_q_output)
    paddle.assign(paddle.to_tensor(np.array([2, 0, 3], np.int32)), output=state.accept_num)
    hidden = np.arange(12, dtype=np.float32).reshape(6, 2)
    proposer.observe_target(state, paddle.to_tensor(hidden))
    np.testing.assert_array_equal(proposer.target_hidden.numpy(), [[2, 3], [0, 0], [10, 11]])


def test_non_decode_slots_get_no_drafts_and_max_dec_len_limits():
    k = 3
    state = decode_state(BASES, k, prefill_slots=(1,), step=3, max_dec_len=5)  # md = 5 - 3 - 1 = 1
    proposer = proposer_with_target(k, k, True, False, state)
    proposal = proposer(state)
    assert proposal.lens.numpy().tolist() == [1, 0, 1]
    assert state.seq_lens_this_time.numpy().tolist() == [2, 4, 2]  # the prefill keeps its length
    assert state.draft_tokens.numpy()[:, 1:].tolist()[0] == [expected_drafts(7, 3, 1, True)[0], -1, -1]


def test_no_target_hidden_yet_means_no_drafts():
    state = decode_state(BASES, 2)
    proposal = DraftModelProposer(RevealLayer(), 2)(state)
    assert proposal.lens.numpy().tolist() == [0, 0, 0]


def test_hybrid_fills_the_remaining_slots_from_the_ngram_continuation():
    # prompt holds "... 305 1 2 3 4"; the model's single draft (3*100 + 7 % 100 = 307 for slot 0) is
    # planted in the prompt so the n-gram continues after it
    k, steps = 4, 1
    prompt = [9, 307, 61, 62, 63, 64]
    state = decode_state([7], k, prompt=prompt, step=3)
    proposer = proposer_with_target(k, steps, True, False, state)
    proposal = proposer(state)
    assert proposal.tokens.numpy().tolist() == [[307, 61, 62, 63]]
    assert proposal.lens.numpy().tolist() == [4] and state.seq_lens_this_time.numpy().tolist() == [5]
    # max_dec_len bounds model + n-gram drafts together
    state = decode_state([7], k, prompt=prompt, step=3, max_dec_len=6)  # md = 2
    proposer = proposer_with_target(k, steps, True, False, state, keep_probs=True)
    proposal = proposer(state)
    assert proposal.tokens.numpy().tolist() == [[307, 61, -1, -1]]
    # the draft probabilities: the model's q for column 0, one-hot for the n-gram columns
    q = proposer.draft_probs.numpy()
    assert q.shape == (1, 4, 10_000)
    assert q[0, 0, 307] == pytest.approx(1.0) and q[0, 1, 61] == 1.0
    assert (q[0, 2:] == 0).all()  # zeros past the drafts


def test_hybrid_respects_the_token_budget():
    k, steps = 4, 1
    prompt = [9, 307, 61, 62, 63, 64]
    state = decode_state([7, 7], k, prompt=prompt, step=3)
    proposer = DraftModelProposer(RevealLayer(), k, num_model_steps=steps, token_budget=5)
    observe_one_row_per_slot(proposer, state, np.array([[3, 0], [3, 0]], np.float32))
    proposal = proposer(state)
    assert state.seq_lens_this_time.numpy().tolist() == [4, 1]  # 5 - 1 reserved for slot 1's base token
    assert proposal.lens.numpy().tolist() == [3, 0]


def test_sampled_drafts_keep_their_probabilities_and_are_reproducible():
    from fastspec.demo.draft_models import TinyDraftHead

    k = 2
    state = decode_state(BASES, k)
    head = TinyDraftHead(50, 2, seed=1)
    runs = []
    for static in (False, True):
        proposer = DraftModelProposer(head, k, sample_drafts=True, static=static)
        observe_one_row_per_slot(proposer, state, np.array([[0.1, 0.2], [0.3, -1], [2, 1]], np.float32))
        runs.append((proposer(state).tokens.numpy(), proposer.draft_probs.numpy()))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_allclose(runs[0][1], runs[1][1], rtol=1e-5, atol=1e-7)
    q = runs[0][1]
    np.testing.assert_allclose(q.sum(axis=-1), 1.0, rtol=1e-5)
    assert (q[np.arange(3)[:, None], np.arange(k)[None], runs[0][0]] > 0).all()  # each draft has q > 0


def test_draft_probs_rows_follow_the_packing():
    k = 2
    state = decode_state(BASES, k)
    proposer = proposer_with_target(k, k, True, False, state, keep_probs=True)
    proposer(state)
    state.pack_rows()  # rows: 3 per slot
    rows = proposer.draft_probs_rows(state, state.num_rows).numpy()
    drafts = state.draft_tokens.numpy()
    assert rows.shape == (9, 10_000)
    for b in range(3):
        for i in range(k):
            assert rows[3 * b + i, drafts[b, i + 1]] == 1.0  # argmax drafts: one-hot q
        assert rows[3 * b + k].sum() == 0  # the bonus row has no draft


@pytest.mark.parametrize("steps", [0, 5, 2.0])
def test_bad_num_model_steps(steps):
    with pytest.raises(ValueError, match="num_model_steps"):
        DraftModelProposer(RevealLayer(), 4, num_model_steps=steps)


@pytest.mark.parametrize("static", [False, True], ids=["eager", "static"])
def test_sampled_drafts_use_the_request_seed_on_the_draft_stream(static):
    from fastspec import reference as ref
    from fastspec.demo.draft_models import TinyDraftHead

    k, b = 3, 3
    state = decode_state(BASES, k)
    proposer = DraftModelProposer(TinyDraftHead(50, 2, seed=4), k, sample_drafts=True, static=static)
    observe_one_row_per_slot(proposer, state, np.array([[0.1, 0.2], [0.3, -1], [2, 1]], np.float32))
    drafts = proposer(state).tokens.numpy()
    q = proposer.draft_probs.numpy()  # the very probabilities each step sampled from
    seed, step = state.seed.numpy().reshape(-1), state.step_idx.numpy().reshape(-1)
    rows, cu = np.arange(b, dtype=np.int32), np.arange(b + 1, dtype=np.int32)
    ones, zeros = np.ones(b, np.float32), np.zeros(b, np.int32)
    for i in range(k):
        expected = ref.sample_tokens(q[:, i], ones, zeros, seed, step + i, rows, cu, stream=ref.STREAM_DRAFT)
        np.testing.assert_array_equal(drafts[:, i], expected)

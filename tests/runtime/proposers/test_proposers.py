"""The proposer contract and the NgramProposer over ngram_match."""

import numpy as np
import paddle
import pytest

from fastspec import reference
from fastspec.runtime.proposers import NgramProposer, Proposal, ProposalError, Proposer
from tests.helpers.runtime_cases import decoding_state


class FixedProposer(Proposer):
    def __init__(self, k, tokens, lens):
        super().__init__(k)
        self.tokens, self.lens = tokens, lens

    def propose(self, state):
        return Proposal(paddle.to_tensor(self.tokens), paddle.to_tensor(self.lens))


def test_wrong_shape_gets_the_documented_error():
    state = decoding_state(k=3)
    bad = FixedProposer(3, np.zeros((3, 2), np.int64), np.zeros(3, np.int32))
    with pytest.raises(ProposalError, match=r"shape \[num_reqs, num_speculative_tokens\] = \[3, 3\], got \[3, 2\]"):
        bad(state)
    bad = FixedProposer(3, np.zeros((2, 3), np.int64), np.zeros(3, np.int32))
    with pytest.raises(ProposalError, match=r"= \[3, 3\], got \[2, 3\]"):
        bad(state)
    bad = FixedProposer(3, np.zeros((3, 3), np.int32), np.zeros(3, np.int32))
    with pytest.raises(ProposalError, match="tokens must be int64"):
        bad(state)
    bad = FixedProposer(3, np.zeros((3, 3), np.int64), np.zeros(4, np.int32))
    with pytest.raises(ProposalError, match=r"lens must have shape \[num_reqs\] = \[3\], got \[4\]"):
        bad(state)


def test_valid_proposal_is_written_for_decode_slots_only():
    state = decoding_state(k=3)
    tokens = np.array([[11, 12, 13], [21, 22, 23], [31, 32, 33]], np.int64)
    FixedProposer(3, tokens, np.array([2, 5, 3], np.int32))(state)  # lens are clipped to K
    np.testing.assert_array_equal(state.draft_tokens.numpy()[:, 1:], [[11, 12, -1], [21, 22, 23], [-1, -1, -1]])
    np.testing.assert_array_equal(state.seq_lens_this_time.numpy(), [3, 4, 0])  # slot 2 is free


def test_ngram_proposer_matches_the_reference():
    state = decoding_state(k=3)
    before = {name: getattr(state, name).numpy().copy() for name in ("draft_tokens", "seq_lens_this_time")}
    want_drafts, want_lens = reference.ngram_match(
        state.token_ids_all.numpy(),
        state.prompt_lens.numpy(),
        state.step_idx.numpy(),
        state.draft_token_num.numpy(),
        before["draft_tokens"],
        before["seq_lens_this_time"],
        state.seq_lens_encoder.numpy(),
        state.seq_lens_decoder.numpy(),
        state.max_dec_len.numpy(),
        max_ngram_size=3,
        min_ngram_size=1,
    )
    proposal = NgramProposer(3, max_ngram_size=3)(state)
    np.testing.assert_array_equal(state.draft_tokens.numpy(), want_drafts)
    np.testing.assert_array_equal(state.seq_lens_this_time.numpy(), want_lens)
    # slot 0: generated [5, 6] matches the prompt at 0 -> drafts 7, 8, 5; slot 1: [1] -> 2, 3, 1
    np.testing.assert_array_equal(want_drafts[:2, 1:], [[7, 8, 5], [2, 3, 1]])
    np.testing.assert_array_equal(proposal.lens.numpy(), [3, 3, 0])


def test_proposer_rejects_bad_k():
    with pytest.raises(ValueError, match="num_speculative_tokens must be >= 1"):
        NgramProposer(0)
    state = decoding_state(k=3)
    with pytest.raises(ValueError, match="state holds 3 draft columns"):
        NgramProposer(2)(state)

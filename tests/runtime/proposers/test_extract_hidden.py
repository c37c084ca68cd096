"""ExtractHiddenStatesProposer: always [num_reqs, 1] from the target-sampled column; K must be 1."""

from __future__ import annotations

import numpy as np
import paddle
import pytest

from fastspec.runtime.proposers.extract_hidden import ExtractHiddenStatesProposer
from tests.helpers.draft_helpers import decode_state


@pytest.mark.parametrize(
    "prefill_slots, expected_lens",
    [((0, 1, 2), [0, 0, 0]), ((), [1, 1, 1]), ((1,), [1, 0, 1])],
    ids=["prefill-only", "decode-only", "mixed"],
)
def test_drafts_are_num_reqs_by_one_from_the_sampled_column(prefill_slots, expected_lens):
    state = decode_state([7, 42, 13], 1, prefill_slots=prefill_slots)
    proposal = ExtractHiddenStatesProposer(1)(state)
    assert proposal.tokens.shape == [3, 1] and proposal.tokens.dtype == paddle.int64
    assert proposal.lens.numpy().tolist() == expected_lens
    for b in range(3):
        if expected_lens[b]:
            assert proposal.tokens.numpy()[b, 0] == state.draft_tokens.numpy()[b, 0]
            assert state.draft_tokens.numpy()[b, 1] == state.draft_tokens.numpy()[b, 0]


@pytest.mark.parametrize("k", [0, 2, 5])
def test_num_speculative_tokens_must_be_one(k):
    with pytest.raises(ValueError, match="num_speculative_tokens must be 1"):
        ExtractHiddenStatesProposer(k)


def test_records_hidden_states_of_committed_tokens():
    state = decode_state([7, 42], 1)
    proposer = ExtractHiddenStatesProposer(1)
    # slot 0 verified one draft (rows 0, 1) and committed 2 tokens; slot 1 committed 1 (row 2 of 2..3)
    paddle.assign(paddle.to_tensor(np.array([0, 2, 4], np.int32)), output=state.cu_seqlens_q_output)
    paddle.assign(paddle.to_tensor(np.array([2, 1], np.int32)), output=state.accept_num)
    state.accept_tokens[:] = paddle.to_tensor(np.array([[5, 6], [9, -1]], np.int64))
    hidden = np.arange(8, dtype=np.float32).reshape(4, 2)
    proposer.observe_target(state, paddle.to_tensor(hidden))
    ((tokens0, hidden0),) = proposer.records[0]
    ((tokens1, hidden1),) = proposer.records[1]
    assert tokens0.tolist() == [5, 6] and hidden0.tolist() == [[0, 1], [2, 3]]
    assert tokens1.tolist() == [9] and hidden1.tolist() == [[4, 5]]

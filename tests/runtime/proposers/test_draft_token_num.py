"""Every proposer bounds its drafts by ``state.draft_token_num`` per slot (0: no drafts): what the
adaptive controller relies on."""

import numpy as np
import paddle

from fastspec.runtime.proposers import DraftModelProposer, NgramProposer
from tests.helpers.draft_helpers import RevealLayer, decode_state, observe_one_row_per_slot
from tests.helpers.runtime_cases import decoding_state


def test_ngram_proposer_takes_at_most_draft_token_num():
    state = decoding_state(k=3)
    full = NgramProposer(3, max_ngram_size=3)(state).lens.numpy()[:2]
    assert full.tolist() == [3, 3]
    state = decoding_state(k=3)
    state.draft_token_num[:] = paddle.to_tensor(np.array([0, 2, 3], np.int32))
    lens = NgramProposer(3, max_ngram_size=3, anchored=True)(state).lens.numpy()
    assert lens[:2].tolist() == [0, 2]
    assert state.seq_lens_this_time.numpy()[:2].tolist() == [1, 3]
    assert (state.draft_tokens.numpy()[0, 1:] == -1).all()


def test_draft_model_proposer_and_its_hybrid_take_at_most_draft_token_num():
    for steps in (3, 1):  # all model drafts; one model draft then ngram_append
        state = decode_state([7, 8, 9], k=3)
        proposer = DraftModelProposer(RevealLayer(), 3, num_model_steps=steps)
        observe_one_row_per_slot(proposer, state, np.zeros((3, 2), np.float32))  # every slot can draft
        state.draft_token_num[:] = paddle.to_tensor(np.array([0, 1, 3], np.int32))
        lens = proposer(state).lens.numpy()
        assert lens[0] == 0 and lens[1] <= 1 and state.seq_lens_this_time.numpy()[0] == 1
        assert lens[2] >= steps  # the model's drafts where the slot may take them
        assert (state.draft_tokens.numpy()[0, 1:] == -1).all()

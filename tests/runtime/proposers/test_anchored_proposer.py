"""NgramProposer with anchored drafting: the state's anchors follow the reference step by step, a new
request starts from -1, and the config switch reaches the proposer."""

from __future__ import annotations

from fastspec import reference as ref
from fastspec.runtime.config import SpeculativeConfig
from fastspec.runtime.proposers.ngram import NgramProposer
from fastspec.runtime.state import RequestParams, SpecState
from tests.helpers.ngram_cases import ARRAY_NAMES

PROMPT = [1, 2, 9, 9, 9, 1, 2, 3, 4, 5, 6, 7, 8]


def decode_state(generated: list[int], anchor: int) -> SpecState:
    state = SpecState(max_num_seqs=2, max_model_len=64, num_speculative_tokens=3, end_tokens=[0])
    slot = state.insert(PROMPT, RequestParams(seed=1, max_dec_len=20))
    p, s = len(PROMPT), len(generated)
    row = state.token_ids_all.numpy()[slot]
    row[p : p + s] = generated
    state.token_ids_all[slot] = state._tensor(row)
    state.step_idx[slot] = s
    state.seq_lens_encoder[slot] = 0
    state.seq_lens_decoder[slot] = p + s
    state.seq_lens_this_time[slot] = 1
    state.ngram_anchor[slot] = anchor
    return state


def test_the_proposer_keeps_copying_from_its_anchor():
    state = decode_state([1, 2, 3, 4], anchor=7)
    arrays = {name: getattr(state, name).numpy().copy() for name in ARRAY_NAMES}
    expected = ref.ngram_match(
        *(arrays[n] for n in ARRAY_NAMES), max_ngram_size=2, ngram_anchor=state.ngram_anchor.numpy()
    )
    proposal = NgramProposer(3, max_ngram_size=2, anchored=True).propose(state)
    assert proposal.tokens.numpy()[0].tolist() == expected[0][0, 1:].tolist() == [5, 6, 7]
    assert state.ngram_anchor.numpy().tolist() == expected[2].tolist() == [9, -1]


def test_without_anchoring_the_state_anchor_is_left_alone():
    state = decode_state([1, 2, 3, 4], anchor=7)
    NgramProposer(3, max_ngram_size=2).propose(state)
    assert state.ngram_anchor.numpy().tolist() == [7, -1]


def test_a_new_request_starts_without_an_anchor():
    state = decode_state([1, 2, 3, 4], anchor=7)
    state.free(0)
    slot = state.insert([4, 4, 4], RequestParams(seed=2, max_dec_len=5))
    assert int(state.ngram_anchor[slot]) == -1


def test_the_config_switch_reaches_the_proposer_and_is_on_by_default():
    config = SpeculativeConfig.from_dict({"method": "ngram", "num_speculative_tokens": 3, "anchored": False})
    assert NgramProposer.from_config(config).anchored is False
    assert (
        NgramProposer.from_config(
            SpeculativeConfig.from_dict({"method": "ngram", "num_speculative_tokens": 3})
        ).anchored
        is True
    )

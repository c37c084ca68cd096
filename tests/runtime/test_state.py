"""SpecState: requests in and out of slots; the tensors keep their buffers across steps."""

import numpy as np
import paddle
import pytest

from fastspec.runtime.config import SpeculativeConfig
from fastspec.runtime.proposers import NgramProposer
from fastspec.runtime.sampler import Sampler
from fastspec.runtime.state import RequestParams, SpecState

TENSORS = (
    "token_ids_all",
    "prompt_lens",
    "step_idx",
    "max_dec_len",
    "seed",
    "seq_lens_encoder",
    "seq_lens_decoder",
    "seq_lens_this_time",
    "accept_num",
    "draft_token_num",
    "top_k",
    "reasoning_status",
    "stop_flags",
    "is_block_step",
    "temperature",
    "top_p",
    "draft_tokens",
    "accept_tokens",
    "end_tokens",
    "cu_seqlens_q_output",
    "batch_id_per_token_output",
)


def test_insert_pack_output_free():
    state = SpecState(3, 16, 2, end_tokens=[0], place="cpu")
    a = state.insert([4, 5, 6], RequestParams(seed=1, max_dec_len=5, temperature=0.5, top_p=0.8, top_k=3), request_id=7)
    b = state.insert([9], RequestParams(seed=2, max_dec_len=4), request_id=8)
    assert (a, b, state.free_slots) == (0, 1, [2])
    assert state.token_ids_all.numpy()[0, :4].tolist() == [4, 5, 6, -1]
    assert state.seq_lens_encoder.numpy().tolist() == [3, 1, 0]
    assert state.stop_flags.numpy().tolist() == [False, False, True]
    assert state.pack_rows() == 2  # a prefill slot has one output row
    assert state.cu_seqlens_q_output.numpy().tolist() == [0, 1, 2, 2]
    assert state.batch_id_per_token_output.numpy().tolist() == [0, 1, -1, -1, -1, -1, -1, -1, -1]
    assert state.output(0).tolist() == []
    state.free(0)
    assert state.free_slots == [0, 2] and state.request_of_slot[0] is None
    assert state.pack_rows() == 1  # the freed slot has no rows left
    assert state.cu_seqlens_q_output.numpy().tolist() == [0, 0, 1, 1]


def test_insert_errors():
    state = SpecState(1, 8, 1, end_tokens=[0], place="cpu")
    with pytest.raises(ValueError, match="prompt is empty"):
        state.insert([], RequestParams(seed=0, max_dec_len=2))
    with pytest.raises(ValueError, match="prompt length 5 \\+ max_dec_len 4 exceeds max_model_len 8"):
        state.insert([1] * 5, RequestParams(seed=0, max_dec_len=4))
    state.insert([1], RequestParams(seed=0, max_dec_len=2))
    with pytest.raises(RuntimeError, match="no free slot"):
        state.insert([1], RequestParams(seed=0, max_dec_len=2))
    with pytest.raises(ValueError, match="end_tokens"):
        SpecState(1, 8, 1, end_tokens=[])


def test_insert_keeps_every_bit_of_a_seed():
    state = SpecState(3, 8, 1, end_tokens=[0], place="cpu")
    seeds = [2**62 + 1, 2**62, -(2**63) + 3]  # a Python int written into an element would pass through float64
    for seed in seeds:
        state.insert([1], RequestParams(seed=seed, max_dec_len=2))
    assert state.seed.numpy().tolist() == seeds


PARAMETER_TENSORS = ("max_dec_len", "seed", "temperature", "top_p", "top_k", "sample_temperature", "sample_top_p")
PARAMETER_TENSORS += ("sample_top_k", "min_p")
TABLE_TENSORS = ("repetition_penalty", "presence_penalty", "frequency_penalty", "min_tokens", "stop_token_ids")
TABLE_TENSORS += ("logit_bias_ids", "logit_bias_values", "bad_words", "stop_sequences")


def parameter_bits(state, slot):
    """Each parameter tensor's entry or row of ``slot``, as bytes (a zero's sign counts)."""
    tables = state.logit_tables
    values = {name: getattr(state, name).numpy()[slot].tobytes() for name in PARAMETER_TENSORS}
    values.update({name: getattr(tables, name).numpy()[slot].tobytes() for name in TABLE_TENSORS})
    return values


def test_a_reused_slot_holds_its_new_requests_parameters():
    """Parameters are written only where they change: a slot that held other requests' parameters holds exactly
    what a fresh state writes for its new request, whichever requests came before (zeros signed included)."""
    rng = np.random.default_rng(5)

    def params(i):
        return RequestParams(
            seed=int(rng.integers(-(2**63), 2**63 - 1)),
            max_dec_len=int(rng.integers(2, 6)),
            temperature=float(rng.choice([0.0, -0.0, 0.7, 1.0])),
            top_p=float(rng.choice([0.5, 1.0])),
            top_k=int(rng.choice([0, 3])),
            min_p=float(rng.choice([0.0, -0.0, 0.1])),
            presence_penalty=float(rng.choice([0.0, -0.0, 0.5])),
            min_tokens=int(rng.choice([0, 1])),
            stop_token_ids=[int(t) for t in rng.choice([3, 4, 5], int(rng.integers(0, 3)), replace=False)],
            logit_bias={int(rng.integers(1, 9)): 2.5} if i % 2 else {},
            stop=[[1, 2]] if i % 3 == 0 else [],
        )

    reused = SpecState(1, 16, 2, end_tokens=[0], place="cpu", vocab_size=16)
    for i in range(24):
        request = params(i)
        slot = reused.insert([4, 5], request)
        fresh = SpecState(1, 16, 2, end_tokens=[0], place="cpu", vocab_size=16)
        fresh.insert([4, 5], request)
        assert parameter_bits(reused, slot) == parameter_bits(fresh, 0), i
        reused.free(slot)


def test_equal_parameters_write_nothing(monkeypatch):
    """A new request with its slot's last parameters writes only the parameters that differ: its seed."""
    state = SpecState(1, 16, 2, end_tokens=[0], place="cpu")
    state.insert([4, 5], RequestParams(seed=1, max_dec_len=4, temperature=0.7, top_k=3))
    state.free(0)
    written = set()
    setitem = paddle.Tensor.__setitem__

    def counting(tensor, index, value):
        written.add(id(tensor))
        return setitem(tensor, index, value)

    monkeypatch.setattr(paddle.Tensor, "__setitem__", counting)
    state.insert([4, 5], RequestParams(seed=2, max_dec_len=4, temperature=0.7, top_k=3))
    named = {id(getattr(state, n)): n for n in PARAMETER_TENSORS}
    named.update({id(getattr(state.logit_tables, n)): n for n in TABLE_TENSORS})
    assert [named[t] for t in written if t in named] == ["seed"]
    assert int(state.seed.numpy()[0]) == 2 and state.temperature.numpy()[0] == np.float32(0.7)


def test_insert_a_resumed_request_with_its_output():
    """A preempted request comes back with its output: a prefill of prompt + output at the same positions."""
    state = SpecState(2, 12, 2, end_tokens=[0], place="cpu")
    state.insert([7, 7], RequestParams(seed=1, max_dec_len=4), request_id="x")
    slot = state.insert([4, 5, 6], RequestParams(seed=3, max_dec_len=6), request_id="y", output=[8, 9])
    assert slot == 1 and state.request_of_slot == ["x", "y"]
    assert state.token_ids_all.numpy()[1, :6].tolist() == [4, 5, 6, 8, 9, -1]
    assert (int(state.prompt_lens[1]), int(state.step_idx[1]), int(state.seq_lens_encoder[1])) == (3, 2, 5)
    assert int(state.seq_lens_this_time[1]) == 5 and int(state.seq_lens_decoder[1]) == 0
    assert state.output(1).tolist() == [8, 9]
    state.free(1)
    with pytest.raises(ValueError, match="an output of 4 tokens leaves nothing to generate \\(max_dec_len 4\\)"):
        state.insert([4], RequestParams(seed=3, max_dec_len=4), output=[1, 2, 3, 4])
    assert state.free_slots == [1]


def test_steps_update_tensors_in_place():
    """Allocated once: proposer + sampler steps leave every buffer where it was (CUDA Graph friendly)."""
    state = SpecState(2, 24, 3, end_tokens=[0], place="cpu")
    addresses = {name: getattr(state, name).data_ptr() for name in TENSORS}
    state.insert([3, 4, 5, 3, 4, 5, 3], RequestParams(seed=1, max_dec_len=8, temperature=0.0), request_id=0)
    proposer = NgramProposer(3)
    sampler = Sampler(
        SpeculativeConfig.from_dict({"method": "ngram", "num_speculative_tokens": 3, "verify_strategy": "greedy"})
    )
    rng = np.random.default_rng(0)
    for _ in range(3):
        proposer(state)
        rows = state.pack_rows()
        sampler(paddle.to_tensor(rng.normal(size=(rows, 10)).astype(np.float32)), state)
    assert state.step_idx.numpy()[0] >= 3
    for name in TENSORS:
        assert getattr(state, name).data_ptr() == addresses[name], name

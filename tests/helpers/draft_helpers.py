"""Shared helpers of the draft-model proposer tests: a state with decode slots, a revealing layer."""

from __future__ import annotations

import numpy as np
import paddle
from paddle import nn

from fastspec.runtime.state import RequestParams, SpecState

V = 10_000


class RevealLayer(nn.Layer):
    """Its draft token reveals its inputs: ``token = 100 * round(hidden[0]) + input_id % 100``;
    it outputs ``hidden + [1, 0]``, so a chained step sees the previous hidden plus one."""

    def forward(self, input_ids, hidden):
        h = paddle.round(hidden[:, 0]).astype("int64")
        token = h * 100 + paddle.remainder(input_ids, paddle.full_like(input_ids, 100))
        logits = nn.functional.one_hot(token, V).astype("float32") * 30.0
        return logits, hidden + paddle.to_tensor([1.0, 0.0], dtype="float32")


def expected_drafts(base: int, target_h: int, steps: int, chained: bool) -> list[int]:
    out, ids, h = [], base, target_h
    for _ in range(steps):
        token = 100 * h + ids % 100
        out.append(token)
        ids = token
        h = h + 1 if chained else target_h
    return out


def decode_state(
    bases, k: int, *, prompt=(5, 6, 7, 8), step: int = 3, max_dec_len: int = 50, prefill_slots=()
) -> SpecState:
    """Slots in decode (base token = bases[b]) after ``step`` generated tokens; some slots prefill."""
    b = len(bases)
    state = SpecState(b, 64, k, [0], "cpu")
    for slot, base in enumerate(bases):
        state.insert(list(prompt), RequestParams(seed=slot + 1, max_dec_len=max_dec_len), request_id=slot)
        if slot in prefill_slots:
            continue
        generated = list(range(20, 20 + step - 1)) + [base]
        state.token_ids_all[slot, len(prompt) : len(prompt) + step] = paddle.to_tensor(np.array(generated, np.int64))
        state.step_idx[slot] = step
        state.seq_lens_encoder[slot] = 0
        state.seq_lens_decoder[slot] = len(prompt) + step - 1
        state.seq_lens_this_time[slot] = 1
        state.draft_tokens[slot, 0] = base
    return state


def observe_one_row_per_slot(proposer, state: SpecState, hidden) -> None:
    """``proposer.observe_target`` after a step in which every slot committed one token from one
    row (row b is slot b's): each slot's target hidden state becomes ``hidden[b]``."""
    b = state.max_num_seqs
    paddle.assign(paddle.to_tensor(np.arange(b + 1, dtype=np.int32)), output=state.cu_seqlens_q_output)
    paddle.assign(paddle.ones([b], dtype="int32"), output=state.accept_num)
    proposer.observe_target(state, hidden if isinstance(hidden, paddle.Tensor) else paddle.to_tensor(hidden))

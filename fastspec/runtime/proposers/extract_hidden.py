"""``ExtractHiddenStatesProposer``: exports the target's hidden states of committed tokens.

Runs the speculative loop with ``num_speculative_tokens == 1`` so that the target returns its
hidden states, and hands them out (to train draft heads, or to return pooled vectors). It
drafts nothing of its own: its one draft per request is the token the target sampled last
(``draft_tokens[b, 0]`` after the state update: the last committed token, which is
``accept_tokens[b, accept_num - 1]``). Its proposal is always ``[num_reqs, 1]`` whether the step
before verified one draft (two rows per request) or none (a prefill step, one row).

Exported per request: ``records[request_id]`` is a list of ``(tokens, hidden)`` pairs, one per
step the request committed tokens in: ``tokens`` int64 ``[n]`` are the committed tokens and
``hidden`` float32 ``[n, H]`` the target's hidden states of the rows that produced them (row i of
a decode step, the single row of a prefill). ``sink(request_id, tokens, hidden)``, when given,
is called instead of recording.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import paddle

from fastspec.runtime.proposers.base import Proposal, Proposer
from fastspec.runtime.state import SpecState


class ExtractHiddenStatesProposer(Proposer):
    """Always proposes ``[num_reqs, 1]``: the target-sampled token; records the target's hidden states.

    Raises:
        ValueError: ``num_speculative_tokens != 1``.
    """

    needs_target_hidden = True

    def __init__(
        self, num_speculative_tokens: int = 1, sink: Callable[[int, np.ndarray, np.ndarray], None] | None = None
    ) -> None:
        if num_speculative_tokens != 1:
            raise ValueError(
                f"ExtractHiddenStatesProposer: num_speculative_tokens must be 1 (one draft column: the target-sampled token), "
                f"got {num_speculative_tokens}"
            )
        super().__init__(num_speculative_tokens)
        self.sink = sink
        self.records: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}

    @classmethod
    def from_config(cls, config) -> ExtractHiddenStatesProposer:
        return cls(config.num_speculative_tokens)

    def propose(self, state: SpecState) -> Proposal:
        if state.num_speculative_tokens != 1:
            raise ValueError(
                f"ExtractHiddenStatesProposer: the state holds {state.num_speculative_tokens} draft columns, expected 1"
            )
        decode = state.slot_phases()[1]
        sampled = state.draft_tokens[:, 0:1].clone()  # [num_reqs, 1] in every kind of step
        limit = (state.max_dec_len - state.step_idx - 1 > 0) & (state.draft_token_num > 0)
        has = paddle.logical_and(paddle.logical_and(decode, limit), sampled.reshape([-1]) >= 0)
        return Proposal(sampled, has.astype("int32"))

    def observe_target(self, state: SpecState, hidden: paddle.Tensor) -> None:
        """Records the hidden states of the rows that produced this step's committed tokens."""
        num = state.accept_num.numpy().reshape(-1)
        if not num.any():
            return
        cu = state.cu_seqlens_q_output.numpy()
        tokens = state.accept_tokens.numpy()
        rows = hidden.astype("float32").numpy()
        for b in np.flatnonzero(num > 0):
            request = state.request_of_slot[b]
            n, first = int(num[b]), int(cu[b])
            n = min(n, max(int(cu[b + 1]) - first, 0))  # never past the slot's rows
            pair = (tokens[b, :n].copy(), rows[first : first + n].copy())
            if self.sink is not None:
                self.sink(request, *pair)
            else:
                self.records.setdefault(request, []).append(pair)

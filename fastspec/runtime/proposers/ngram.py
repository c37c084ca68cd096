"""``NgramProposer``: prompt-lookup drafts through the ``ngram_match`` op."""

from __future__ import annotations

import paddle

from fastspec import ops
from fastspec.runtime.proposers.base import Proposal, Proposer
from fastspec.runtime.state import SpecState


def draft_ngrams(op, state: SpecState, settings) -> None:
    """``op`` (ngram_match or ngram_append) on ``state``'s tensors, in place, with the n-gram settings of
    ``settings`` (a proposer: max_ngram_size, min_ngram_size, token_budget, anchored)."""
    op(
        state.token_ids_all,
        state.prompt_lens,
        state.step_idx,
        state.draft_token_num,
        state.draft_tokens,
        state.seq_lens_this_time,
        state.seq_lens_encoder,
        state.seq_lens_decoder,
        state.max_dec_len,
        max_ngram_size=settings.max_ngram_size,
        min_ngram_size=settings.min_ngram_size,
        token_budget=settings.token_budget,
        ngram_anchor=state.ngram_anchor if settings.anchored else None,
    )


class NgramProposer(Proposer):
    """Copies what followed the newest n-gram's earlier occurrence (prompt first, then output)."""

    static_step_safe = True

    def __init__(
        self,
        num_speculative_tokens: int,
        max_ngram_size: int = 3,
        min_ngram_size: int = 1,
        token_budget: int = 0,
        anchored: bool = False,
    ):
        super().__init__(num_speculative_tokens)
        self.max_ngram_size = max_ngram_size
        self.min_ngram_size = min_ngram_size
        self.token_budget = token_budget
        self.anchored = anchored  # keep copying from where the last drafts came from (state.ngram_anchor)

    @classmethod
    def from_config(cls, config) -> NgramProposer:
        return cls(
            config.num_speculative_tokens,
            config.max_ngram_size,
            config.min_ngram_size,
            config.token_budget,
            anchored=getattr(config, "anchored", False),
        )

    def propose(self, state: SpecState) -> Proposal:
        self._match(state)
        # ngram_match wrote in place; hand the same drafts back through the checked contract (a slot that does not
        # decode has its length ignored where the proposal is written: SpecState.pack_slot_rows)
        return Proposal(state.draft_tokens[:, 1:], paddle.clip(state.seq_lens_this_time - 1, min=0))

    def draft(self, state: SpecState) -> None:
        """ngram_match writes a decode slot's drafts and length in place as the proposal's write would (an
        inactive slot's too; a prefill keeps its own), so the step takes them as they are: the five small ops of
        a proposal and its write cost an eager step at a small batch more than the op. Only a slot that does not
        run (stopped, blocked) may keep drafts then; the packing gives it no rows."""
        self._match(state)

    def _match(self, state: SpecState) -> None:
        if state.num_speculative_tokens != self.num_speculative_tokens:
            raise ValueError(
                f"NgramProposer: the state holds {state.num_speculative_tokens} draft columns, "
                f"the proposer drafts {self.num_speculative_tokens}"
            )
        draft_ngrams(ops.ngram_match, state, self)

"""``Sampler``: one forward for every backend: logits -> probs -> tokens -> state update."""

from __future__ import annotations

import paddle

from fastspec import ops
from fastspec.core.schema import PROBABILITY_STRATEGIES
from fastspec.runtime.config import SpeculativeConfig
from fastspec.runtime.logprobs import step_logprobs
from fastspec.runtime.state import SamplingSets, SpecState
from fastspec.runtime.trees import first_child_one_hot, sample_at_depths


class Sampler:
    """Turns the target's logits at the packed output rows into committed tokens.

    The ops run wherever the state's tensors live (CPU, GPU, or an XPU in a build with the XPU toolchain); nothing
    here picks a place.
    Two paths share one beginning and one ending:

        logits = process_logits(logits): each request's penalties, bias and bans, each row with its
                 own history (the drafts before it counted), float32 logits in place
        probs = temperature_softmax(logits): softmax(logits / temperature), bit-identical on every backend
        sets:  each request's min_p, top_k and top_p, inside the sampling ops below
        naive  (method none / naive): sample_tokens, one token per request
        verify (method ngram / mtp):  targets (GREEDY argmax | TARGET_MATCH sample_tokens |
                                      TOPP top_p_candidates | REJECTION and BLOCK top_k_top_p_probs,
                                      the target's distribution, with the proposer's draft_probs),
                                      then verify_draft_tokens
        both:  update_model_status (where a run ends: end and stop tokens, stop sequences), then
               (``logprobs_width > 0``) the emitted tokens' log-probabilities under the processed rows /
               temperature (fastspec.runtime.logprobs)

    A request with temperature 0 is greedy on every path: its top_k becomes 1 and its top_p 0,
    so sample_tokens and top_p_candidates keep only the argmax (smallest id on ties).
    """

    def __init__(self, config: SpeculativeConfig) -> None:
        self.config = config
        self.strategy = config.verify_strategy
        self.accept_all = config.accept_policy == "accept_all"
        self.reject_all = config.accept_policy == "reject_all"
        self.grammar = None  # a GrammarBatch when some request has structured output: its masks apply first
        # > 0: also the emitted tokens' log-probabilities and this many best of each row (fastspec.runtime.logprobs),
        # left in step_logprobs after each forward
        self.logprobs_width = 0
        self.step_logprobs: paddle.Tensor | None = None

    def forward(
        self, logits: paddle.Tensor, state: SpecState, draft_probs: paddle.Tensor | None = None
    ) -> paddle.Tensor:
        """Samples / verifies, then advances ``state`` in place; returns ``has_running`` bool [1].

        Args:
            logits: ``[T, V]`` float, row ``t`` belongs to request ``state.batch_id_per_token_output[t]``
                (``state.pack_rows()`` wrote the packing for this step).
            state: the batch; updated in place.
            draft_probs: strategies REJECTION and BLOCK only: ``[T, V]`` float32, row ``t`` the draft model's
                distribution of the draft that row judges (``DraftModelProposer.draft_probs_rows``).
        """
        rows = state.row_batch_ids(logits.shape[0])
        logits = state.logit_tables.apply(logits, state, rows)
        if self.grammar is not None:  # each constrained row's grammar, before temperature and the sampling sets
            logits = ops.apply_token_bitmask(
                logits, self.grammar.token_bitmask, self.grammar.bitmask_index[: logits.shape[0]]
            )
        probs = self._probs(logits, state, rows)
        sets = self._greedy_aware_params(state)
        if self.config.speculative:
            self._verify_and_sample(probs, state, rows, sets, draft_probs)
        else:
            self._normal_sample(probs, state, rows, sets)
        has_running = self._update(state)
        self.step_logprobs = step_logprobs(logits, state, self.logprobs_width) if self.logprobs_width else None
        return has_running

    __call__ = forward

    # -- steps ------------------------------------------------------------------------------

    @staticmethod
    def _probs(logits: paddle.Tensor, state: SpecState, rows: paddle.Tensor) -> paddle.Tensor:
        """float32 softmax of logits / temperature of each row's request (a greedy request's reads 1), the same
        bits on every backend (docs/ops/temperature_softmax.md); padding rows are zeros."""
        return ops.temperature_softmax(logits, state.sample_temperature, rows)

    @staticmethod
    def _greedy_aware_params(state: SpecState) -> SamplingSets:
        """(top_p, top_k, min_p) per slot as ``insert`` wrote them: a greedy request's top_p and top_k are 0 and 1."""
        return SamplingSets(state.sample_top_p, state.sample_top_k, state.min_p)

    def _normal_sample(self, probs, state: SpecState, rows, sets: SamplingSets) -> None:
        """One seeded draw per request from its single output row, kept by verify_draft_tokens with no
        drafts (TARGET_MATCH): the token lands in accept_tokens[:, 0] as a verify step's bonus token would,
        and a row without a valid probability ends its request as there. One op instead of a dozen small
        ones, and the naive and verify paths write the accepted runs in one place."""
        tokens = ops.sample_tokens(
            probs, sets.top_p, sets.top_k, state.seed, state.step_idx, rows, state.cu_seqlens_q_output, sets.min_p
        )
        self._verify(state, "target_match", target=tokens)

    def _verify_and_sample(self, probs, state: SpecState, rows, sets: SamplingSets, draft_probs=None) -> None:
        """Targets for every row by the configured strategy, then verify the drafts against them."""
        if state.trees:
            return self._verify_tree(probs, state, rows, sets)
        target = ids = scores = lens = target_probs = None
        if self.strategy in PROBABILITY_STRATEGIES:
            if draft_probs is None:
                raise ValueError(f"Sampler: strategy '{self.strategy}' needs draft_probs [T, V] from the proposer")
            # p = the distribution sample_tokens samples each row from (greedy rows: one-hot argmax)
            target_probs = ops.top_k_top_p_probs(probs, sets.top_p, sets.top_k, rows, sets.min_p)
        elif self.strategy == "greedy":
            target = paddle.argmax(probs, axis=-1)  # first maximum: smallest id on ties
        elif self.strategy == "target_match":
            target = ops.sample_tokens(
                probs, sets.top_p, sets.top_k, state.seed, state.step_idx, rows, state.cu_seqlens_q_output, sets.min_p
            )
        else:
            max_len = min(self.config.max_candidate_len, probs.shape[-1])
            ids, scores, lens = ops.top_p_candidates(probs, sets.top_p, rows, sets.min_p, max_candidate_len=max_len)
        self._verify(
            state,
            self.strategy,
            target=target,
            ids=ids,
            scores=scores,
            lens=lens,
            target_probs=target_probs,
            draft_probs=draft_probs,
        )

    def _verify(self, state: SpecState, strategy: str, target=None, ids=None, scores=None, lens=None, **probs) -> None:
        """verify_draft_tokens over the state's drafts: writes each slot's accepted run and its count."""
        ops.verify_draft_tokens(
            state.accept_tokens,
            state.accept_num,
            state.draft_tokens,
            target,
            ids,
            scores,
            lens,
            state.seed,
            state.step_idx,
            state.stop_flags,
            state.is_block_step,
            state.seq_lens_encoder,
            state.seq_lens_this_time,
            state.cu_seqlens_q_output,
            state.reasoning_status,
            state.max_dec_len,
            state.end_tokens,
            strategy=strategy,
            accept_all=self.accept_all,
            reject_all=self.reject_all,
            **probs,
        )

    def _verify_tree(self, probs, state: SpecState, rows, sets: SamplingSets) -> None:
        """A tree step (docs/trees.md): targets per node row, then ``verify_draft_tree``; its accepted path
        goes to ``state.accept_nodes``. TARGET_MATCH draws a node's target at ``step_idx + depth``: the
        position its token would take, so a tree emits what a step without drafts would (coupled draws).
        REJECTION judges a node's first child as a deterministic draft (q one-hot on it; the proposers draft
        top-k trees), which keeps the target distribution (docs/ops/draft_tree.md)."""
        target = target_probs = draft_probs = None
        if self.strategy == "rejection":
            target_probs = ops.top_k_top_p_probs(probs, sets.top_p, sets.top_k, rows, sets.min_p)
            draft_probs = first_child_one_hot(state, rows, int(probs.shape[-1]))
        elif self.strategy == "greedy":
            target = paddle.argmax(probs, axis=-1)
        else:
            target = sample_at_depths(probs, state, rows, sets)
        outs = ops.verify_draft_tree(
            state.accept_tokens,
            state.accept_num,
            state.draft_tree_tokens,
            state.draft_tree_parents,
            target,
            state.seed,
            state.step_idx,
            state.stop_flags,
            state.is_block_step,
            state.seq_lens_encoder,
            state.seq_lens_this_time,
            state.cu_seqlens_q_output,
            state.max_dec_len,
            state.end_tokens,
            target_probs=target_probs,
            draft_probs=draft_probs,
            strategy=self.strategy,
        )
        paddle.assign(outs.accept_nodes, output=state.accept_nodes)

    @staticmethod
    def _update(state: SpecState) -> paddle.Tensor:
        """Commits the kept tokens; a slot's run ends at its first end or stop token or stop sequence."""
        tables = state.logit_tables
        outs = ops.update_model_status(
            state.seq_lens_encoder,
            state.seq_lens_decoder,
            state.seq_lens_this_time,
            state.step_idx,
            state.stop_flags,
            state.accept_tokens,
            state.accept_num,
            state.draft_tokens,
            state.token_ids_all,
            state.prompt_lens,
            state.is_block_step,
            state.max_dec_len,
            state.end_tokens,
            tables.stop_token_ids,
            tables.stop_sequences,
            tables.min_tokens,
        )
        return outs[-1]

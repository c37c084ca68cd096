"""``SuffixProposer``: suffix-decoding drafts from the native host cache (docs/suffix.md).

The cache lives on the host, so the work is split around the step's programs:

- ``draft_on_host(state)`` (before the step; the runner and ``SpecStep.prepare`` call it), from
  ``state.host`` (the slots as the last status left them) without reading the device:
  starts every newly inserted request in the cache with its prompt, stops requests whose
  slot stopped, and drafts up to K tokens for every decode slot in one native call, into the
  proposer's fixed buffers ``draft_buffer`` / ``draft_lens``;
- ``propose(state)`` (inside the step, tensor ops only, so it can sit in a static or captured
  program): the buffered drafts, cut to each slot's ``draft_token_num``; with
  ``with_anchored_ngram`` also anchored n-gram drafts, one of the two per slot as
  ``DraftChoice`` says (the drafter whose drafts the target has been accepting lately);
- in a tree step (``state.num_tree_nodes = N > 0``, docs/trees.md) the host drafts each decode slot's
  tree instead (``speculate_tree_batch``: ``tree_top_k`` continuations per node, at most ``N - 1`` nodes,
  depth at most K) into ``tree_buffers``, and ``propose_tree(state)`` hands them to ``build_draft_tree``
  as candidates, each node's probability its score, which keeps them in the order drafted;
- ``observe_accepted(state, status)`` (after the step): folds every slot's kept tokens
  (``accept_tokens[:accept_num]`` of the step's status, the step's one read) into the cache in one native call, scores both drafters'
  drafts against them (with n-gram), and stops finished requests, whose outputs stay in the
  global tree for later requests; ``release_slot`` (an aborted or preempted request) drops the
  request's tree and keeps nothing of it. A resumed request starts over with its prompt and output.
"""

from __future__ import annotations

import numpy as np
import paddle

from fastspec.runtime.proposers.base import Proposal, Proposer
from fastspec.runtime.proposers.draft_choice import DraftChoice
from fastspec.runtime.proposers.ngram import NgramProposer
from fastspec.runtime.proposers.tree import TreeProposal
from fastspec.runtime.state import SpecState
from fastspec.runtime.step_status import StepStatus
from fastspec.runtime.suffix import SuffixCache, SuffixRequestError


class SuffixProposer(Proposer):
    """Drafts from a ``SuffixCache`` kept in step with the state's slots."""

    static_step_safe = True  # propose reads only the fixed buffers filled before the program
    drafts_trees = True  # the cache's trees, drafted on the host (tree_top_k continuations per node)

    def __init__(
        self,
        num_speculative_tokens: int,
        max_tree_depth: int = 24,
        max_cached_requests: int = 10000,
        max_spec_factor: float = 2.0,
        max_spec_offset: float = 0.0,
        min_token_prob: float = 0.1,
        ngram: NgramProposer | None = None,
        cache: SuffixCache | None = None,
        tree_top_k: int = 2,
    ) -> None:
        super().__init__(num_speculative_tokens)
        self.tree_top_k = tree_top_k
        self.tree_buffers: TreeProposal | None = None  # [B, N - 1] candidates of a tree step
        self.cache = cache if cache is not None else SuffixCache(max_tree_depth, max_cached_requests)
        self.rule = dict(
            max_spec_factor=max_spec_factor, max_spec_offset=max_spec_offset, min_token_prob=min_token_prob
        )
        self.ngram = ngram  # the anchored n-gram proposer whose longer drafts win, or None
        self.draft_buffer: paddle.Tensor | None = None  # int64 [B, K]
        self.draft_lens: paddle.Tensor | None = None  # int32 [B]
        self.ngram_buffer: paddle.Tensor | None = None  # int64 [B, K]: the n-gram drafts of the step
        self.ngram_lens: paddle.Tensor | None = None  # int32 [B]
        self.preference: paddle.Tensor | None = None  # int32 [B]: DraftChoice.preference (1: suffix)
        self._choice: DraftChoice | None = None
        self._offered = (np.zeros((0, 0), np.int64), np.zeros(0, np.int32), np.zeros(0, bool))  # host drafts, decode
        self._keys = np.zeros(0, np.int64)  # the cache key of each slot's request, -1 for none
        self._requests: list = []
        self._serial = 0

    @classmethod
    def from_config(cls, config) -> SuffixProposer:
        s = config.suffix
        ngram = None
        if s.with_anchored_ngram:
            ngram = NgramProposer(
                config.num_speculative_tokens,
                config.max_ngram_size,
                config.min_ngram_size,
                config.token_budget,
                anchored=True,
            )
        return cls(
            config.num_speculative_tokens,
            s.max_tree_depth,
            s.max_cached_requests,
            s.max_spec_factor,
            s.max_spec_offset,
            s.min_token_prob,
            ngram=ngram,
            tree_top_k=config.tree.top_k,
        )

    # -- host side, between the programs ---------------------------------------------------

    def prepare(self, state: SpecState) -> None:
        self._check_state(state)
        self._buffers(state)  # before a static program is built over them

    def draft_on_host(self, state: SpecState) -> None:
        self._check_state(state)
        self._buffers(state)
        host = state.host  # the slots as the last status and the inserts left them: no device read
        enc, dec = host.encoder, host.decoder
        stopped = host.stopped | host.blocked
        self._stop_slots(np.flatnonzero((self._keys >= 0) & host.stopped))
        new = np.flatnonzero((enc > 0) & ~stopped)
        if new.size:
            self._stop_slots(new[self._keys[new] >= 0])  # a slot reused without a stop seen
            for slot in new.tolist():  # once per request
                # a resumed request starts over with its prompt and the output it already has
                self.cache.start_request(self._serial, np.concatenate([host.prompts[slot], host.output(slot)]))
                self._keys[slot], self._requests[slot] = self.cache.key(self._serial), self._serial
                self._serial += 1
            if self._choice is not None:
                self._choice.reset(new)
        decode = (enc == 0) & (dec > 0) & ~stopped
        keys = np.where(decode, self._keys, -1)
        k = self.num_speculative_tokens
        if self.tree_buffers is not None:
            self._draft_trees(keys, state)
            return
        tokens, lens, _ = self.cache.speculate_batch(keys, np.full(keys.shape, k, np.int32), k, **self.rule)
        paddle.assign(state.staging(tokens), output=self.draft_buffer)
        paddle.assign(state.staging(lens), output=self.draft_lens)
        if self._choice is not None:
            self._offered = (tokens, lens, decode)
            paddle.assign(state.staging(self._choice.preference()), output=self.preference)

    def _draft_trees(self, keys: np.ndarray, state: SpecState) -> None:
        count = self.tree_buffers.tokens.shape[1]
        tokens, parents, probs, _, _ = self.cache.speculate_tree_batch(
            keys,
            np.full(keys.shape, count, np.int32),
            count,
            tree_width=self.tree_top_k,
            max_spec_depth=self.num_speculative_tokens,
            **self.rule,
        )
        for host, buffer in zip(
            (tokens, parents, probs), (self.tree_buffers.tokens, self.tree_buffers.parents, self.tree_buffers.scores)
        ):
            paddle.assign(state.staging(host), output=buffer)

    def observe_accepted(self, state: SpecState, status: StepStatus) -> None:
        if self._keys.size == 0:
            return
        kept, kept_num = status.accept_tokens, status.accept_num
        self.cache.add_batch(self._keys, kept, kept_num)
        if self._choice is not None:
            tokens, lens, decode = self._offered
            ngram_tokens, ngram_lens = status.extras
            self._choice.observe(
                decode, (tokens, lens), (ngram_tokens, ngram_lens[:, 0].astype(np.int32)), kept, kept_num
            )
        self._stop_slots(np.flatnonzero((self._keys >= 0) & status.stopped))

    def status_fields(self, state: SpecState) -> list[paddle.Tensor]:
        """The step's anchored n-gram drafts, scored against the kept tokens in ``observe_accepted``."""
        return [self.ngram_buffer, self.ngram_lens] if self.ngram is not None else []

    def release_slot(self, slot: int) -> None:
        """An aborted or preempted request: its own tree goes, and its unfinished output is not cached."""
        if self._keys.size == 0 or self._keys[slot] < 0:
            return
        request = self._requests[slot]
        self._stop_slots(np.array([slot]))
        if self.cache.max_cached_requests != 0:
            try:
                self.cache.evict_cached_response(request)
            except SuffixRequestError:
                pass  # already evicted (the cache's bound)

    def _stop_slots(self, slots: np.ndarray) -> None:
        for slot in slots.tolist():
            self.cache.stop_request(self._requests[slot])
            self._keys[slot], self._requests[slot] = -1, None

    def _buffers(self, state: SpecState) -> None:
        if self.draft_buffer is None:
            b, k = state.max_num_seqs, self.num_speculative_tokens
            self.draft_buffer = paddle.to_tensor(np.full((b, k), -1, np.int64), place=state.place)
            self.draft_lens = paddle.to_tensor(np.zeros(b, np.int32), place=state.place)
            self._keys = np.full(b, -1, np.int64)
            self._requests = [None] * b
            if self.ngram is not None:
                self.ngram_buffer = paddle.to_tensor(np.full((b, k), -1, np.int64), place=state.place)
                self.ngram_lens = paddle.to_tensor(np.zeros(b, np.int32), place=state.place)
                self.preference = paddle.to_tensor(np.zeros(b, np.int32), place=state.place)
                self._choice = DraftChoice(b)
            if state.trees:
                if self.ngram is not None:
                    raise ValueError(
                        "SuffixProposer: a tree step drafts from the suffix cache alone (no anchored n-gram)"
                    )
                c = state.num_tree_nodes - 1
                self.tree_buffers = TreeProposal(
                    paddle.to_tensor(np.full((b, c), -1, np.int64), place=state.place),
                    paddle.to_tensor(np.full((b, c), -1, np.int32), place=state.place),
                    paddle.to_tensor(np.zeros((b, c), np.float32), place=state.place),
                )
        elif self.draft_buffer.shape[0] != state.max_num_seqs:
            raise ValueError(
                f"SuffixProposer: built for {self.draft_buffer.shape[0]} slots, the state has {state.max_num_seqs}"
            )

    def _check_state(self, state: SpecState) -> None:
        if state.num_speculative_tokens != self.num_speculative_tokens:
            raise ValueError(
                f"SuffixProposer: the state holds {state.num_speculative_tokens} draft columns, "
                f"the proposer drafts {self.num_speculative_tokens}"
            )

    # -- inside the step ------------------------------------------------------------------

    def propose(self, state: SpecState) -> Proposal:
        if self.draft_buffer is None:
            raise ValueError("SuffixProposer: draft_on_host(state) must run before propose (the runner calls it)")
        # ngram_match's cap: the slot's draft_token_num, K, and the room before max_dec_len
        room = (state.max_dec_len - state.step_idx - 1).clip(min=0, max=self.num_speculative_tokens).astype("int32")
        limit = paddle.minimum(paddle.clip(state.draft_token_num, 0, self.num_speculative_tokens), room)
        tokens, lens = self.draft_buffer, paddle.minimum(self.draft_lens, limit)
        if self.ngram is not None:
            other = self.ngram.propose(state)
            other_lens = other.lens.reshape([-1])
            paddle.assign(other.tokens, output=self.ngram_buffer)  # scored against the kept tokens later
            paddle.assign(other_lens, output=self.ngram_lens)
            pref = self.preference  # DraftChoice's rule (first_wins), in tensor ops
            suffix_wins = paddle.logical_or(
                paddle.logical_or(
                    paddle.logical_and(pref == 1, lens > 0), paddle.logical_and(pref == -1, other_lens == 0)
                ),
                paddle.logical_and(pref == 0, lens > other_lens),
            )
            tokens = paddle.where(suffix_wins.unsqueeze(-1), tokens, other.tokens)
            lens = paddle.where(suffix_wins, lens, other_lens)
        return Proposal(tokens, lens)

    def propose_tree(self, state: SpecState, top_k: int) -> TreeProposal:
        """The trees ``draft_on_host`` drafted (``top_k`` continuations per node) as ``build_draft_tree``'s
        candidates."""
        if self.tree_buffers is None:
            raise ValueError("SuffixProposer: draft_on_host(state) of a tree state must run before propose_tree")
        if top_k != self.tree_top_k:
            raise ValueError(f"SuffixProposer: drafts trees of top_k {self.tree_top_k}, the step asks for {top_k}")
        return self.tree_buffers

"""Reference of suffix drafting (docs/suffix.md): counts read straight off the stored sequences.

A *tree* here is a multiset of token sequences. The native cache keeps each tree as a trie of
every substring up to ``max_depth`` tokens with its occurrence count; this reference keeps only
the sequences and counts occurrences by scanning them, so it states the rule without any tree
mechanics:

- ``count(s)``: how many times ``s`` occurs in the tree's sequences (any position);
- the continuation of ``s`` is the token ``t`` with the largest ``count(s + t)`` (ties: the
  smallest id), and only while ``len(s) < max_depth``;
- a match of length ``m`` is the context's last ``m`` tokens, for ``m = 1 ..
  min(len(context), max_depth - 1)`` while ``count > 0``;
- from a match, the draft follows the continuations, each token's probability the running
  product of ``count(s + t) / count(s)``, and stops before a token whose probability falls below
  ``min_token_prob`` or after ``int(m * max_spec_factor + max_spec_offset + 1e-6)`` tokens
  (at most ``max_spec_tokens``);
- the draft's score is the sum of its probabilities (the expected accepted length when each
  probability is right); the best score over all match lengths wins, a longer match on ties.
  A tree draft (below) grows from the match whose chain wins so; its score is its own.

A *tree* draft (``tree_width > 1``) grows best-first instead: from the match, each taken node
offers its ``tree_width`` most frequent continuations (ties: the smallest id) whose running
probability is at least ``min_token_prob``, and the draft takes the most probable offer not yet
taken (ties: the earliest offered), at most ``max_spec_nodes`` nodes, none deeper than
``max_spec_depth`` below the match. The match's budget (above) caps the nodes too (Arctic's
trees), or with ``budget_caps_depth`` the depth instead (a runner's fixed node count). A node
comes after its parent (``parents`` index earlier nodes, -1: a child of the match) and the
probabilities never grow along the order. With ``tree_width == 1`` only the best continuation
is offered, so the tree is the chain, of ``min(nodes, depth)`` tokens.

``SuffixCacheReference`` adds the two trees of a cache: one per active request (its prompt and
response) and a global one over the responses of cached requests (active ones included), at
most ``max_cached_requests`` of them (-1: no limit, 0: no global tree), the oldest evicted first.
The local tree's draft is kept unless the global one scores strictly higher (for a tree draft: the
trees' chains score).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Hashable, Sequence


@dataclass
class Draft:
    """A draft: ``parents[i]`` is the index of token i's parent (-1: the context; a chain's is ``i - 1``)."""

    token_ids: list = field(default_factory=list)
    parents: list = field(default_factory=list)
    probs: list = field(default_factory=list)
    score: float = 0.0
    match_len: int = 0


@dataclass(frozen=True)
class SpecRule:
    """How long a draft may grow (see the module docstring)."""

    max_spec_tokens: int
    max_spec_factor: float = 1.0
    max_spec_offset: float = 0.0
    min_token_prob: float = 0.1
    tree_width: int = 1  # continuations a node offers; 1: the chain
    max_spec_depth: int = 2**31 - 1  # deepest draft token below the match
    max_spec_nodes: int = 2**31 - 1
    budget_caps_depth: bool = False  # the budget caps a tree's depth, not its nodes

    def budget(self, match_len: int) -> int:
        """``int(m * max_spec_factor + max_spec_offset)`` for a match of ``m`` tokens, at most ``max_spec_tokens``."""
        grown = match_len * self.max_spec_factor + self.max_spec_offset + 1e-6
        return max(0, int(min(float(self.max_spec_tokens), grown)))

    def depth(self, match_len: int) -> int:
        """A draft's deepest token below a match of ``match_len`` tokens."""
        return min(self.budget(match_len), self.max_spec_depth) if self.budget_caps_depth else self.max_spec_depth

    def nodes(self, match_len: int) -> int:
        """A draft's most tokens (a tree's nodes; a chain's is also its depth)."""
        n = self.max_spec_nodes if self.budget_caps_depth else min(self.budget(match_len), self.max_spec_nodes)
        return n if self.tree_width > 1 else min(n, self.depth(match_len))


class ReferenceTree:
    """A multiset of sequences with the counts and continuations of the rule."""

    def __init__(self, max_depth: int) -> None:
        self.max_depth = max_depth
        self.seqs: dict[Hashable, list[int]] = {}

    def extend(self, seq_id: Hashable, tokens: Sequence[int]) -> None:
        self.seqs.setdefault(seq_id, []).extend(int(t) for t in tokens)

    def remove(self, seq_id: Hashable) -> None:
        del self.seqs[seq_id]

    def _ends(self, pattern: Sequence[int]) -> list[tuple[list[int], int]]:
        """Every occurrence of ``pattern`` as (sequence, index just past it)."""
        m = len(pattern)
        pattern = list(pattern)
        return [
            (seq, end) for seq in self.seqs.values() for end in range(m, len(seq) + 1) if seq[end - m : end] == pattern
        ]

    def speculate(self, context: Sequence[int], rule: SpecRule) -> Draft:
        best, chain = Draft(), replace(rule, tree_width=1)
        context = [int(t) for t in context]
        for m in range(1, min(len(context), self.max_depth - 1) + 1):
            ends = self._ends(context[-m:])
            if not ends:
                break
            draft = self._follow(ends, m, chain.nodes(m), rule.min_token_prob)
            if draft.score >= best.score:
                best, best_ends = draft, ends
                best.match_len = m
        if rule.tree_width > 1 and best.match_len:  # the tree grows from the match its chain wins with
            m = best.match_len
            best = self._grow(best_ends, m, rule.nodes(m), rule)
            best.match_len = m
        return best

    def _follow(self, ends: list[tuple[list[int], int]], depth: int, budget: int, min_prob: float) -> Draft:
        """The most likely path from a match whose occurrences end at ``ends``."""
        draft, prob = Draft(), 1.0
        while len(draft.token_ids) < budget and depth < self.max_depth:
            counts: dict[int, int] = {}
            for seq, end in ends:
                if end < len(seq):
                    counts[seq[end]] = counts.get(seq[end], 0) + 1
            if not counts:
                break
            token = min(counts, key=lambda t: (-counts[t], t))
            prob = prob * counts[token] / len(ends)
            if prob < min_prob:
                break
            draft.parents.append(len(draft.token_ids) - 1)
            draft.token_ids.append(token)
            draft.probs.append(prob)
            draft.score += prob
            ends = [(seq, end + 1) for seq, end in ends if end < len(seq) and seq[end] == token]
            depth += 1
        return draft

    def _grow(self, ends: list[tuple[list[int], int]], depth: int, budget: int, rule: SpecRule) -> Draft:
        """The best-first tree from a match whose occurrences end at ``ends``."""
        draft, deepest = Draft(), rule.depth(depth)
        offers: list[tuple[float, list, int, int]] = []  # (probability, ends, trie depth, parent), in offer order

        def offer(ends: list, at: int, prob: float, parent: int) -> None:
            if at >= self.max_depth or at - depth >= deepest:
                return
            counts: dict[int, int] = {}
            for seq, end in ends:
                if end < len(seq):
                    counts[seq[end]] = counts.get(seq[end], 0) + 1
            best = sorted(counts, key=lambda t: (-counts[t], t))[: min(rule.tree_width, budget - len(draft.token_ids))]
            for token in best:
                p = prob * counts[token] / len(ends)
                if p < rule.min_token_prob:
                    break
                offers.append(
                    (p, [(seq, end + 1) for seq, end in ends if end < len(seq) and seq[end] == token], at + 1, parent)
                )

        offer(ends, depth, 1.0, -1)
        while len(draft.token_ids) < budget and offers:
            top = max(range(len(offers)), key=lambda i: (offers[i][0], -i))
            prob, taken, at, parent = offers.pop(top)
            seq, end = taken[0]
            draft.parents.append(parent)
            draft.token_ids.append(seq[end - 1])
            draft.probs.append(prob)
            draft.score += prob
            offer(taken, at, prob, len(draft.token_ids) - 1)
        return draft


class SuffixCacheReference:
    """Per-request trees plus the global tree of responses, as the module docstring says."""

    def __init__(self, max_tree_depth: int = 24, max_cached_requests: int = -1) -> None:
        self.max_tree_depth = max_tree_depth
        self.max_cached_requests = max_cached_requests
        self.local: dict[Hashable, ReferenceTree] = {}
        self.global_tree = ReferenceTree(max_tree_depth)
        self.cached: OrderedDict[Hashable, int] = OrderedDict()  # request -> its sequence in the global tree
        self._next_seq = 0

    def start_request(self, req_id: Hashable, prompt: Sequence[int]) -> None:
        assert req_id not in self.local, req_id
        self.local[req_id] = ReferenceTree(self.max_tree_depth)
        self.local[req_id].extend(0, prompt)
        if self.max_cached_requests == 0:
            return
        if req_id in self.cached:
            self.evict_cached_response(req_id)
        self.cached[req_id] = self._next_seq
        self.global_tree.extend(self._next_seq, [])
        self._next_seq += 1
        while self.max_cached_requests > 0 and len(self.cached) > self.max_cached_requests:
            oldest = next(iter(self.cached))
            self.evict_cached_response(oldest)

    def add_active_response(self, req_id: Hashable, tokens: Sequence[int]) -> None:
        self.local[req_id].extend(0, tokens)
        if req_id in self.cached:
            self.global_tree.extend(self.cached[req_id], tokens)

    def stop_request(self, req_id: Hashable) -> None:
        del self.local[req_id]

    def evict_cached_response(self, req_id: Hashable) -> None:
        self.global_tree.remove(self.cached.pop(req_id))

    def speculate(self, req_id: Hashable, context: Sequence[int], rule: SpecRule) -> Draft:
        chain = replace(rule, tree_width=1)  # the chains choose the tree a tree draft grows in
        mine = self.local[req_id].speculate(context, chain)
        other = self.global_tree.speculate(context, chain)
        tree = self.global_tree if other.score > mine.score else self.local[req_id]
        return tree.speculate(context, rule) if rule.tree_width > 1 else (other if tree is self.global_tree else mine)

    def context(self, req_id: Hashable) -> list[int]:
        """The request's prompt and response so far (what the batch call drafts from)."""
        return list(self.local[req_id].seqs[0])

"""DraftChoice in C++ against its numpy reference: the proposer's batch observe, and
``SuffixCache(anchored_ngram=...).draft``, the suffix method's default in one native call, against
the same method composed of references (the suffix draft, ``ngram_match``'s reference at B = 1 with
an anchor, the numpy ``DraftChoice``), draft for draft on random and real sequences."""

from __future__ import annotations

import re

import numpy as np
import pytest

from fastspec.core.errors import FastspecArgumentError
from fastspec.reference import ngram_match
from fastspec.reference.draft_choice import DraftChoice as ReferenceChoice
from fastspec.reference.draft_choice import first_wins
from fastspec.runtime.proposers.draft_choice import DraftChoice
from fastspec.suffix import SuffixCache
from tests.helpers.paths import ROOT

RULES = [
    dict(max_spec_factor=2.0, max_spec_offset=0.0, min_token_prob=0.1),
    dict(max_spec_factor=1.0, max_spec_offset=1.0, min_token_prob=0.0),
]


@pytest.mark.parametrize("seed", range(6))
def test_batch_observe_equals_the_reference(seed):
    rng = np.random.default_rng(seed)
    slots, width, kept_width = int(rng.integers(1, 9)), int(rng.integers(0, 7)), int(rng.integers(1, 9))
    native, ref = DraftChoice(slots), ReferenceChoice(slots)
    for _ in range(30):
        kept = rng.integers(0, 3, (slots, kept_width))  # few ids: drafts often agree for a while
        kept_num = rng.integers(0, kept_width + 1, slots).astype(np.int32)
        offers = [
            (rng.integers(0, 3, (slots, width)), rng.integers(-1, width + 2, slots).astype(np.int32)) for _ in range(2)
        ]
        for drafts, _ in offers:  # drafts that copy the kept tokens, so long prefixes occur
            copy = rng.random(slots) < 0.5
            n = min(width, kept_width)
            drafts[copy, :n] = kept[copy, :n]
        mask = rng.random(slots) < 0.8
        native.observe(mask, *offers, kept, kept_num)
        ref.observe(mask, *offers, kept, kept_num)
        np.testing.assert_array_equal(native.average, ref.average)  # bit for bit
        np.testing.assert_array_equal(native.preference(), ref.preference())
        if rng.random() < 0.1:
            reset = rng.integers(0, slots, 2)
            native.reset(reset)
            ref.reset(reset)


class ChosenReference:
    """One request of the suffix method's default, composed of reference parts."""

    def __init__(self, suffix: SuffixCache, req, prompt: list[int], max_ngram_size: int, min_ngram_size: int) -> None:
        self.suffix, self.req, self.sizes = suffix, req, (max_ngram_size, min_ngram_size)
        self.row, self.p, self.anchor = list(prompt), len(prompt), np.full(1, -1, np.int64)
        self.choice, self.offered = ReferenceChoice(1), None

    def draft(self, k: int, rule: dict) -> list[int]:
        mine = self.suffix.speculate(
            self.req, self.suffix.request_tokens(self.req), max_spec_tokens=k, **rule
        ).token_ids
        s, row = len(self.row) - self.p, np.array([self.row], np.int64)
        drafts, lens, self.anchor = ngram_match(
            row,
            np.array([self.p]),
            np.array([s]),
            np.array([k], np.int32),
            np.zeros((1, k + 1), np.int64),
            np.ones(1, np.int32),
            np.zeros(1, np.int32),
            np.array([len(self.row)], np.int32),
            np.array([1 << 40]),
            max_ngram_size=self.sizes[0],
            min_ngram_size=self.sizes[1],
            ngram_anchor=self.anchor,
        )
        other = drafts[0, 1 : lens[0]].tolist()
        self.offered = [(np.array([d], np.int64).reshape(1, -1), np.array([len(d)])) for d in (mine, other)]
        self.chose_ngram = mine != other and not first_wins(self.choice.preference(), len(mine), len(other))[0]
        return other if self.chose_ngram else mine

    def update(self, kept: list[int]) -> None:
        if self.offered is not None:
            self.choice.observe(np.array([True]), *self.offered, np.array([kept]).reshape(1, -1), np.array([len(kept)]))
            self.offered = None
        self.suffix.add_active_response(self.req, kept)
        self.row.extend(kept)


def run(requests, k, rule, depth, sizes, rng, batch_updates=False):
    """Requests in turn, two live at a time; every step both draft, the oracle keeps the agreeing
    prefix and one more token, and both take it. Returns how often each drafter's draft was picked
    where they differed."""
    native = SuffixCache(depth, 4, anchored_ngram=sizes[0], min_ngram_size=sizes[1])
    plain = SuffixCache(depth, 4)
    picks = {"suffix": 0, "ngram": 0}
    live = []
    for r, (prompt, output) in enumerate(requests):
        native.start_request(r, prompt)
        plain.start_request(r, prompt)
        live.append([r, ChosenReference(plain, r, prompt, *sizes), list(output)])
        if len(live) < 2 and r + 1 < len(requests):
            continue
        while live:
            entry = live[int(rng.integers(len(live)))]
            req, ref, rest = entry
            got, want = native.draft(req, k, **rule), ref.draft(k, rule)
            assert got == want
            if (
                ref.offered[0][1][0]
                and ref.offered[1][1][0]
                and ref.offered[0][0].tolist() != ref.offered[1][0].tolist()
            ):
                picks["ngram" if ref.chose_ngram else "suffix"] += 1
            ok = 0
            while ok < min(len(got), len(rest) - 1) and got[ok] == rest[ok]:
                ok += 1
            kept, entry[2] = rest[: ok + 1], rest[ok + 1 :]
            if batch_updates and rng.random() < 0.2:  # a batch row that keeps nothing still scores the drafts
                native.add_batch(np.array([native.key(req), -1]), np.zeros((2, 1), np.int64), np.zeros(2, np.int32))
                ref.update([])
                assert native.draft(req, k, **rule) == ref.draft(k, rule)  # a fresh offer, scored below
            if batch_updates:
                tokens = np.full((1, len(kept) + 1), -1, np.int64)
                tokens[0, : len(kept)] = kept
                native.add_batch(np.array([native.key(req)]), tokens, np.array([len(kept)], np.int32))
            else:
                native.add_active_response(req, kept)
            ref.update(kept)
            if not entry[2]:
                native.stop_request(req)
                plain.stop_request(req)
                live.remove(entry)
    return picks


@pytest.mark.parametrize("seed", range(6))
def test_random_sequences_draft_as_the_reference(seed):
    rng = np.random.default_rng(seed)
    vocab = int(rng.integers(3, 10))
    base = rng.integers(0, vocab, 80)
    requests = []
    for _ in range(5):  # outputs that copy stretches of the prompt with edits: both drafters have work
        prompt = np.concatenate([base[int(rng.integers(0, 40)) :], rng.integers(0, vocab, int(rng.integers(0, 20)))])
        cut = int(rng.integers(1, len(prompt)))
        output = np.concatenate([prompt[cut:], rng.integers(0, vocab, 10), prompt[: int(rng.integers(1, 30))]])
        requests.append((prompt.tolist(), output.tolist()))
    k = int(rng.choice([1, 3, 5, 16]))
    sizes = (int(rng.integers(1, 6)), 1)
    sizes = (sizes[0], int(rng.integers(1, sizes[0] + 1)))
    run(requests, k, RULES[seed % 2], int(rng.integers(2, 12)), sizes, rng, batch_updates=seed % 3 == 0)


def test_real_sequences_draft_as_the_reference():
    """The demo's fixed corpus (code, notes, a config) as word tokens: each output is its prompt with lines dropped
    and moved (a rewrite) or a run of lines from another file (new text)."""
    token = re.compile(r"[A-Za-z_]\w*|\d+|\s+|[^\w\s]")
    files = sorted((ROOT / "fastspec" / "demo" / "data").glob("*.txt"))
    vocab: dict[str, int] = {}
    requests = []
    for i, path in enumerate(files):
        lines = path.read_text().splitlines(True)[:60]
        other = files[(i + 1) % len(files)].read_text().splitlines(True)[:20]
        edited = [line for j, line in enumerate(lines) if j % 7 != 3] + lines[5:9] + other
        requests.append(
            tuple([vocab.setdefault(t, len(vocab)) for t in token.findall("".join(text))] for text in (lines, edited))
        )
    picks = run(requests, 5, RULES[0], 24, (5, 1), np.random.default_rng(1))
    assert picks["suffix"] > 10 and picks["ngram"] > 10  # the choice went both ways where it mattered
    picks = run(requests, 16, RULES[1], 24, (5, 2), np.random.default_rng(2), batch_updates=True)
    assert picks["suffix"] > 0 and picks["ngram"] > 0


def test_without_anchored_ngram_draft_is_the_suffix_draft_and_bad_sizes_are_named():
    cache = SuffixCache(8, -1)
    cache.start_request("a", [1, 2, 3, 1, 2, 3, 1])
    assert (
        cache.draft("a", 4, max_spec_factor=2.0)
        == cache.speculate("a", cache.request_tokens("a"), 4, max_spec_factor=2.0).token_ids
    )
    assert cache.draft("a", np.int64(4), max_spec_factor=np.float32(2.0)) == cache.draft("a", 4, max_spec_factor=2.0)
    with pytest.raises(FastspecArgumentError, match="SuffixCache.draft: max_spec_tokens"):
        cache.draft("a", -1)
    with pytest.raises(FastspecArgumentError, match="SuffixCache.draft: request 'b' is not active"):
        cache.draft("b", 4)
    with pytest.raises(FastspecArgumentError, match="anchored_ngram must be in"):
        SuffixCache(8, -1, anchored_ngram=0)
    with pytest.raises(FastspecArgumentError, match="min_ngram_size must be in \\[1, 3\\]"):
        SuffixCache(8, -1, anchored_ngram=3, min_ngram_size=4)

"""The native SuffixCache against the reference, draft for draft, and its named errors."""

import numpy as np
import pytest

from fastspec.core.errors import FastspecArgumentError, FastspecTypeError
from fastspec.reference.suffix import SpecRule, SuffixCacheReference
from fastspec.suffix import SuffixCache, SuffixRequestError
from tests.helpers.paths import ROOT

RULES = [
    dict(max_spec_tokens=5, max_spec_factor=1.0, max_spec_offset=0.0, min_token_prob=0.1),
    dict(max_spec_tokens=16, max_spec_factor=2.0, max_spec_offset=1.0, min_token_prob=0.0),
    dict(max_spec_tokens=8, max_spec_factor=0.5, max_spec_offset=-1.0, min_token_prob=0.3),
]


def same(draft, expected):
    assert draft.token_ids == expected.token_ids
    assert draft.parents == expected.parents
    assert draft.probs == expected.probs  # the same double arithmetic in the same order
    assert draft.score == expected.score
    assert draft.match_len == expected.match_len


class Pair:
    """The native cache and the reference, driven by the same calls."""

    def __init__(self, depth, max_cached):
        self.native = SuffixCache(depth, max_cached)
        self.ref = SuffixCacheReference(depth, max_cached)

    def __getattr__(self, name):
        def both(*args):
            getattr(self.native, name)(*args)
            getattr(self.ref, name)(*args)

        return both

    def check(self, req, context, rule):
        same(self.native.speculate(req, context, **rule), self.ref.speculate(req, context, SpecRule(**rule)))
        assert list(self.native.cached_requests) == list(self.ref.cached)


def run_workload(requests, depth, max_cached, rng, chunk=4):
    """Requests one after another, two at a time: start, respond in chunks, draft at every chunk."""
    pair = Pair(depth, max_cached)
    live = []
    for r, (prompt, response) in enumerate(requests):
        pair.start_request(r, prompt)
        live.append((r, list(prompt), list(response)))
        if len(live) < 2 and r + 1 < len(requests):
            continue
        while live:
            req, seen, rest = live[0] if rng.random() < 0.5 or len(live) == 1 else live[1]
            rule = RULES[int(rng.integers(len(RULES)))]
            pair.check(req, seen[-depth:], rule)  # the request's own tail (the usual call)
            pair.check(req, seen[-depth - 3 : -3] or seen, rule)  # another context: matches walked from the root
            step = rest[:chunk]
            del rest[: len(step)]
            pair.add_active_response(req, step)
            seen.extend(step)
            if not rest:
                pair.stop_request(req)
                live = [x for x in live if x[0] != req]
    return pair


@pytest.mark.parametrize("seed", range(4))
def test_random_sequences_match_reference(seed):
    rng = np.random.default_rng(seed)
    vocab = int(rng.integers(3, 12))  # small vocabularies repeat themselves
    requests = [
        (
            rng.integers(0, vocab, int(rng.integers(1, 40))).tolist(),
            rng.integers(0, vocab, int(rng.integers(1, 60))).tolist(),
        )
        for _ in range(8)
    ]
    pair = run_workload(requests, depth=int(rng.integers(2, 10)), max_cached=int(rng.integers(-1, 4)), rng=rng)
    # evicting a cached response by hand leaves both equal too
    for req in list(pair.ref.cached)[:1]:
        pair.evict_cached_response(req)
    pair.start_request("last", requests[0][1])
    pair.check("last", requests[0][1], RULES[1])


def test_real_sequences_match_reference():
    """Real text as bytes: the first two 600-byte pieces of each file of the demo's fixed corpus (code,
    notes, a config), each piece a request whose response is the next piece."""
    files = sorted((ROOT / "fastspec" / "demo" / "data").glob("*.txt"))
    texts = [list(f.read_bytes()[start : start + 600]) for f in files for start in (0, 600)]
    assert len(texts) == 8 and min(map(len, texts)) > 400
    requests = [(texts[i], texts[i + 1]) for i in range(len(texts) - 1)]
    run_workload(requests, depth=12, max_cached=3, rng=np.random.default_rng(7), chunk=16)


def test_batch_calls_equal_single_calls():
    rng = np.random.default_rng(3)
    one, many = SuffixCache(10, -1), SuffixCache(10, -1)
    prompts = [rng.integers(0, 6, 30).tolist() for _ in range(4)]
    for r, p in enumerate(prompts):
        one.start_request(r, p)
        many.start_request(r, p)
    keys = np.array([many.key(r) for r in range(4)] + [-1], dtype=np.int64)  # -1: an empty slot
    for _ in range(10):
        limits = rng.integers(0, 7, 5).astype(np.int32)
        tokens, lens, scores = many.speculate_batch(keys, limits, width=6, max_spec_factor=2.0, min_token_prob=0.05)
        for r in range(4):
            d = one.speculate(
                r, one.request_tokens(r), max_spec_tokens=int(limits[r]), max_spec_factor=2.0, min_token_prob=0.05
            )
            assert lens[r] == len(d.token_ids) and tokens[r, : lens[r]].tolist() == d.token_ids
            assert (tokens[r, lens[r] :] == -1).all()
            assert scores[r] == np.float32(d.score)
        assert lens[4] == 0 and (tokens[4] == -1).all()
        accepted = rng.integers(0, 6, (5, 4)).astype(np.int64)
        counts = rng.integers(0, 5, 5).astype(np.int32)
        many.add_batch(keys, accepted, counts)
        for r in range(4):
            one.add_active_response(r, accepted[r, : counts[r]].tolist())
        for r in range(4):
            assert one.request_tokens(r).tolist() == many.request_tokens(r).tolist()


def snapshot(cache, reqs):
    return (
        list(cache.active_requests),
        cache.cached_requests,
        cache.memory_bytes(),
        [cache.request_tokens(r).tolist() for r in reqs],
        [cache.speculate(r, cache.request_tokens(r), max_spec_tokens=4, max_spec_factor=4.0) for r in reqs],
    )


def test_bad_calls_raise_named_errors_and_leave_the_cache_unchanged():
    cache = SuffixCache(8, 2, vocab_size=100)
    cache.start_request("a", [1, 2, 3, 1, 2])
    cache.add_active_response("a", [3, 1])
    cache.start_request("b", [4, 5])
    cache.stop_request("b")
    before = snapshot(cache, ["a"])
    bad_calls = [
        (SuffixRequestError, lambda: cache.start_request("a", [1])),  # second start of a live id
        (SuffixRequestError, lambda: cache.add_active_response("b", [1])),  # finished
        (SuffixRequestError, lambda: cache.add_active_response("zz", [1])),  # unknown
        (SuffixRequestError, lambda: cache.speculate("b", [1])),
        (SuffixRequestError, lambda: cache.stop_request("b")),
        (SuffixRequestError, lambda: cache.evict_cached_response("zz")),
        (FastspecArgumentError, lambda: cache.add_active_response("a", [1, -2])),
        (FastspecArgumentError, lambda: cache.add_active_response("a", [100])),  # vocab_size 100
        (FastspecArgumentError, lambda: cache.start_request("c", [2**31])),
        (FastspecTypeError, lambda: cache.add_active_response("a", np.array([1.0, 2.0]))),
        (FastspecTypeError, lambda: cache.add_active_response("a", np.array([[1, 2]]))),
        (FastspecTypeError, lambda: cache.speculate("a", [[1, 2]])),
        (FastspecTypeError, lambda: cache.start_request(["unhashable"], [1])),
        (
            FastspecTypeError,
            lambda: cache.add_batch(np.array([0], np.int32), np.zeros((1, 2), np.int64), np.ones(1, np.int32)),
        ),
        (FastspecTypeError, lambda: cache.add_batch(np.array([0]), np.zeros(2, np.int64), np.ones(1, np.int32))),
        (
            FastspecArgumentError,
            lambda: cache.add_batch(np.array([cache.key("a")]), np.array([[7, -1]]), np.array([2], np.int32)),
        ),
        (
            SuffixRequestError,
            lambda: cache.add_batch(np.array([999]), np.zeros((1, 2), np.int64), np.ones(1, np.int32)),
        ),
        (
            FastspecArgumentError,
            lambda: cache.add_batch(np.array([cache.key("a")]), np.zeros((1, 2), np.int64), np.array([3], np.int32)),
        ),
        (SuffixRequestError, lambda: cache.speculate_batch(np.array([999]), np.ones(1, np.int32), 4)),
        (FastspecTypeError, lambda: cache.speculate("a", [1], use_tree_spec="yes")),
        (FastspecArgumentError, lambda: cache.speculate("a", [1], max_spec_tokens=-1)),
        # what the native fast path declines, so Python words the error
        (FastspecArgumentError, lambda: cache.add_active_response("a", np.array([3, -1], np.int64))),
        (FastspecArgumentError, lambda: cache.add_active_response("a", np.array([100], np.int32))),
        (FastspecArgumentError, lambda: cache.add_active_response("a", (1, 2**40))),
        (FastspecArgumentError, lambda: cache.add_active_response("a", -3)),
        (FastspecArgumentError, lambda: cache.speculate("a", [1, 2, -5])),
        (FastspecArgumentError, lambda: cache.speculate("a", np.array([1, 100]))),
        (FastspecTypeError, lambda: cache.speculate("a", [1], max_spec_tokens=2.0)),
        (FastspecArgumentError, lambda: cache.speculate("a", [1], max_spec_factor=float("nan"))),
        (FastspecArgumentError, lambda: cache.speculate("a", [1], max_spec_factor=-1.0)),
        (FastspecArgumentError, lambda: cache.speculate("a", [1], min_token_prob="0.1")),
        (FastspecTypeError, lambda: cache.speculate(["unhashable"], [1])),
    ]
    for error, call in bad_calls:
        with pytest.raises(error, match="SuffixCache"):
            call()
        assert snapshot(cache, ["a"]) == before
    # a refused start of "c" left it unknown: it can start now
    cache.start_request("c", [1])
    assert "c" in cache.active_requests


def test_the_native_refusal_reads_as_the_python_checks(monkeypatch):
    """A per-step call the native cache refuses (a token id or a rule value out of range) is worded from
    its record as Python words the same call handed over in a form only Python takes (int16 arrays,
    numpy scalars), and Python checks nothing again to word it."""
    cache = SuffixCache(8, 2, vocab_size=100)
    cache.start_request("a", [1, 2, 3, 1, 2])
    pairs = [
        ("add_active_response", ([1, -2],), (np.array([1, -2], np.int16),), {}, {}),
        ("add_active_response", ([100, -1, 200],), (np.array([100, -1, 200], np.int16),), {}, {}),
        ("add_active_response", (7,), (np.int16(7),), {}, {}),  # in range: both take it
        ("speculate", ([1, 2, -5],), (np.array([1, 2, -5], np.int16),), {}, {}),
        ("speculate", ([1],), ([1],), {"max_spec_tokens": -1}, {"max_spec_tokens": np.int64(-1)}),
        ("speculate", ([1],), ([1],), {"max_spec_factor": -1.0}, {"max_spec_factor": np.float32(-1.0)}),
        ("draft", (), (), {"max_spec_tokens": 2**31}, {"max_spec_tokens": np.int64(2**31)}),
    ]
    for method, native_args, python_args, native_kw, python_kw in pairs:
        results = []
        for args, kw, native in ((python_args, python_kw, False), (native_args, native_kw, True)):
            if native:  # Python's checks must not run
                for check in ("_tokens", "_checked_rule"):
                    monkeypatch.setattr(SuffixCache, check, lambda *a, **k: pytest.fail("checked again in Python"))
            try:
                getattr(cache, method)("a", *args, **kw)
                results.append(None)
            except FastspecArgumentError as error:
                results.append(str(error))
            monkeypatch.undo()
        assert results[0] == results[1], (method, native_args, native_kw)
        if method != "add_active_response" or native_args != (7,):
            assert results[0] is not None and results[0].startswith(f"SuffixCache.{method}: ")


def test_eviction_is_oldest_first_and_restart_replaces_the_cached_response():
    cache = SuffixCache(8, 2)
    for r in ("x", "y", "z"):
        cache.start_request(r, [0])
        cache.add_active_response(r, [1, 2, 3])
        cache.stop_request(r)
    assert cache.cached_requests == ["y", "z"]
    cache.start_request("y", [9])  # "y" again: its old response leaves first, no other eviction
    assert cache.cached_requests == ["z", "y"]
    cache.evict_cached_response("z")
    assert cache.cached_requests == ["y"]
    none = SuffixCache(8, 0)  # no global tree
    none.start_request(1, [1, 2])
    none.stop_request(1)
    assert none.cached_requests == [] and list(none.active_requests) == []


def test_memory_grows_with_tokens_and_returns_after_eviction():
    cache = SuffixCache(16, -1)
    rng = np.random.default_rng(0)
    cache.start_request(0, [1])
    cache.stop_request(0)
    base = cache._core.global_nodes()
    cache.start_request(1, [1])
    cache.add_active_response(1, rng.integers(0, 50, 2000).tolist())
    cache.stop_request(1)
    assert cache._core.global_nodes() > base
    cache.evict_cached_response(1)
    assert cache._core.global_nodes() == 1  # the root alone: every node of the evicted response freed


def test_every_accepted_form_of_the_arguments_drafts_alike():
    """Lists, tuples, ints, int32/int64/strided arrays and numpy scalars: the native fast path or
    Python's converting path, the same draft and the same tree."""
    rng = np.random.default_rng(5)
    prompt = rng.integers(0, 6, 60).tolist()
    forms = [
        list,
        tuple,
        lambda t: np.array(t, np.int64),
        lambda t: np.array(t, np.int32),
        lambda t: np.array(t, np.int64).repeat(2)[::2],
        lambda t: np.array(t, np.uint16),
    ]
    caches = [SuffixCache(8, -1) for _ in forms]
    for cache in caches:
        cache.start_request("r", prompt)
    for step in range(20):
        new = rng.integers(0, 6, int(rng.integers(1, 4))).tolist()
        for cache, form in zip(caches, forms):
            cache.add_active_response("r", form(new) if len(new) > 1 else new[0])
        context = caches[0].request_tokens("r").tolist()
        drafts = [
            cache.speculate(
                "r", form(context), max_spec_tokens=np.int32(5), max_spec_factor=np.float64(2.0), min_token_prob=0.1
            )
            for cache, form in zip(caches, forms)
        ]
        for cache, draft in zip(caches[1:], drafts[1:]):
            assert cache.request_tokens("r").tolist() == context
            same(draft, drafts[0])
        same(drafts[0], caches[0].speculate("r", context, 5, 2, 0, 0.1))  # ints for the rule's floats

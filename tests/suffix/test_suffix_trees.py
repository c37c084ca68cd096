"""Tree drafts of the suffix cache (docs/suffix.md "Trees"): the reference's rule, and the native cache against it."""

import numpy as np
import pytest

from fastspec.reference.suffix import ReferenceTree, SpecRule, SuffixCacheReference
from fastspec.runtime.suffix import TREE_WIDTH_ALL
from fastspec.suffix import SuffixCache
from tests.helpers.paths import ROOT

CAPS_DEPTH = dict(budget_caps_depth=True)  # the budget caps a tree's depth, not its nodes
TREE_RULES = [
    dict(max_spec_tokens=15, max_spec_factor=4.0, min_token_prob=0.05, tree_width=TREE_WIDTH_ALL, max_spec_depth=5),
    dict(max_spec_tokens=8, max_spec_factor=2.0, max_spec_offset=1.0, min_token_prob=0.0, tree_width=2),
    dict(max_spec_tokens=6, max_spec_factor=1.0, min_token_prob=0.1, tree_width=3, max_spec_depth=2),
    dict(max_spec_tokens=10, max_spec_factor=3.0, min_token_prob=0.2, tree_width=1, max_spec_depth=3),
    dict(max_spec_tokens=5, max_spec_factor=1.0, min_token_prob=0.05, tree_width=4, max_spec_nodes=9, **CAPS_DEPTH),
    dict(max_spec_tokens=7, max_spec_factor=2.0, min_token_prob=0.0, tree_width=1, max_spec_nodes=4, **CAPS_DEPTH),
]
BATCH_KEYS = ("max_spec_factor", "max_spec_offset", "min_token_prob", "tree_width", "max_spec_depth")


def fields(d):
    return d.token_ids, d.parents, d.probs, d.score, d.match_len


def count(tree, pattern):
    return len(tree._ends(pattern))


def path(draft, i):
    """The draft tokens from the match down to node i."""
    out = []
    while i >= 0:
        out.append(draft.token_ids[i])
        i = draft.parents[i]
    return out[::-1]


@pytest.mark.parametrize("seed", range(6))
def test_reference_tree_follows_the_rule(seed):
    """Shape and probabilities of a reference tree, checked from counts read off the sequences."""
    rng = np.random.default_rng(seed)
    tree = ReferenceTree(int(rng.integers(3, 9)))
    for s in range(3):
        tree.extend(s, rng.integers(0, int(rng.integers(2, 6)), 80).tolist())
    context = tree.seqs[0][: int(rng.integers(1, 80))]
    for rule in map(lambda r: SpecRule(**r), TREE_RULES):
        d = tree.speculate(context, rule)
        m = max(d.match_len, 1)
        assert len(d.token_ids) <= rule.nodes(m) <= rule.max_spec_nodes
        assert d.score == sum(d.probs) or abs(d.score - sum(d.probs)) < 1e-12
        match = context[len(context) - d.match_len :]
        for i, (token, parent, prob) in enumerate(zip(d.token_ids, d.parents, d.probs)):
            assert -1 <= parent < i  # parents first
            assert i == 0 or prob <= d.probs[i - 1]  # taken most probable first
            assert prob >= rule.min_token_prob
            assert len(path(d, i)) <= rule.depth(m) and d.match_len + len(path(d, i)) <= tree.max_depth
            above = match + path(d, i)[:-1]
            expected = (1.0 if parent < 0 else d.probs[parent]) * count(tree, above + [token]) / count(tree, above)
            assert prob == expected
        for node in range(-1, len(d.token_ids)):
            kids = [d.token_ids[i] for i in range(len(d.token_ids)) if d.parents[i] == node]
            assert len(kids) <= rule.tree_width and len(set(kids)) == len(kids)


@pytest.mark.parametrize("seed", range(6))
def test_reference_tree_one_wide_is_the_chain(seed):
    """Growing best-first with one continuation per node gives the chain's walk exactly."""
    rng = np.random.default_rng(seed)
    tree = ReferenceTree(int(rng.integers(2, 10)))
    tree.extend(0, rng.integers(0, 4, 120).tolist())
    for m in range(1, tree.max_depth):
        ends = tree._ends(tree.seqs[0][-m:])
        for budget in (1, 4, 9):
            rule = SpecRule(
                max_spec_tokens=budget,
                min_token_prob=float(rng.choice([0.0, 0.1, 0.3])),
                budget_caps_depth=bool(rng.integers(2)),
            )
            size = rule.nodes(m)  # a chain's: its budget and its depth
            chain = tree._follow(ends, m, size, rule.min_token_prob)
            assert fields(tree._grow(ends, m, size, rule)) == fields(chain)


def drive(requests, depth, rng, chunk):
    """The native cache and the reference through the same calls; every tree draft compared on the way."""
    native, ref = SuffixCache(depth, 3), SuffixCacheReference(depth, 3)
    for r, (prompt, response) in enumerate(requests):
        native.start_request(r, prompt)
        ref.start_request(r, prompt)
        for start in range(0, len(response), chunk):
            context = ref.context(r)
            d = native.speculate(r, context, max_spec_tokens=12, max_spec_factor=3.0, use_tree_spec=True)
            assert fields(d) == fields(ref.speculate(r, context, SpecRule(12, 3.0, tree_width=TREE_WIDTH_ALL)))
            rule = TREE_RULES[int(rng.integers(len(TREE_RULES)))]
            limit = int(rng.integers(0, 16))
            batch = {k: v for k, v in rule.items() if k in BATCH_KEYS}
            tokens, parents, probs, lens, scores = native.speculate_tree_batch(
                np.array([native.key(r), -1]), np.array([limit, 5], np.int32), 16, **batch
            )
            depth = batch.get("max_spec_depth", 2**31 - 1)  # a runner's tree: the budget caps the depth
            want = ref.speculate(
                r,
                context,
                SpecRule(**batch, max_spec_tokens=depth, max_spec_nodes=min(limit, 16), budget_caps_depth=True),
            )
            n = len(want.token_ids)
            assert lens.tolist() == [n, 0] and scores[0] == np.float32(want.score)
            assert tokens[0, :n].tolist() == want.token_ids and parents[0, :n].tolist() == want.parents
            assert probs[0, :n].tolist() == np.float32(want.probs).tolist()
            assert (tokens[:, n:] == -1).all() and (parents[0, n:] == -1).all() and (probs[0, n:] == 0).all()
            step = response[start : start + chunk]
            native.add_active_response(r, step)
            ref.add_active_response(r, step)
        native.stop_request(r)
        ref.stop_request(r)


@pytest.mark.parametrize("seed", range(4))
def test_native_trees_match_reference_on_random_sequences(seed):
    rng = np.random.default_rng(seed)
    vocab = int(rng.integers(2, 8))
    requests = [
        (
            rng.integers(0, vocab, int(rng.integers(1, 30))).tolist(),
            rng.integers(0, vocab, int(rng.integers(1, 50))).tolist(),
        )
        for _ in range(5)
    ]
    drive(requests, int(rng.integers(2, 10)), rng, chunk=int(rng.integers(1, 5)))


def test_native_trees_match_reference_on_real_sequences():
    """The demo's fixed corpus as bytes: 500-byte pieces, each a request whose response is the next."""
    files = sorted((ROOT / "fastspec" / "demo" / "data").glob("*.txt"))
    texts = [list(f.read_bytes()[start : start + 500]) for f in files for start in (0, 500)]
    drive([(texts[i], texts[i + 1]) for i in range(len(texts) - 1)], 12, np.random.default_rng(5), chunk=24)


def test_tree_one_wide_is_the_chain_natively():
    cache = SuffixCache(10)
    cache.start_request("r", (list(range(5)) * 6 + [1, 3, 1, 4]) * 3)
    keys, limits = np.array([cache.key("r")]), np.array([8], np.int32)
    tokens, parents, probs, lens, scores = cache.speculate_tree_batch(
        keys, limits, 8, tree_width=1, max_spec_depth=6, min_token_prob=0.0
    )
    chain_tokens, chain_lens, chain_scores = cache.speculate_batch(keys, limits - 2, 8, min_token_prob=0.0)
    assert (tokens == chain_tokens).all() and (lens == chain_lens).all() and (scores == chain_scores).all()
    assert parents[0, : lens[0]].tolist() == list(range(-1, lens[0] - 1))


def test_bad_tree_calls_raise_named_errors():
    from fastspec.core.errors import FastspecArgumentError, FastspecTypeError
    from fastspec.suffix import SuffixRequestError

    cache = SuffixCache(8)
    cache.start_request("a", [1, 2, 1, 2])
    keys, limits = np.array([cache.key("a")]), np.array([4], np.int32)
    bad = [
        (FastspecArgumentError, "tree_width must be in", dict(tree_width=0)),
        (FastspecArgumentError, "max_spec_depth must be in", dict(max_spec_depth=-1)),
        (FastspecTypeError, "tree_width must be an integer", dict(tree_width=2.0)),
        (FastspecArgumentError, "min_token_prob must be a number", dict(min_token_prob=float("nan"))),
    ]
    for error, message, kw in bad:
        with pytest.raises(error, match=f"SuffixCache.speculate_tree_batch: {message}"):
            cache.speculate_tree_batch(keys, limits, 4, **kw)
    with pytest.raises(FastspecArgumentError, match="max_nodes has shape"):
        cache.speculate_tree_batch(keys, np.array([4, 4], np.int32), 4)
    with pytest.raises(SuffixRequestError, match="key 99 is not an active request"):
        cache.speculate_tree_batch(np.array([99]), limits, 4)
    with pytest.raises(FastspecTypeError, match="use_tree_spec must be a bool"):
        cache.speculate("a", [1, 2], use_tree_spec=1)

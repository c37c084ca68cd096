"""The reference drafting rule on cases worked out by hand (docs/suffix.md)."""

from fastspec.reference.suffix import ReferenceTree, SpecRule, SuffixCacheReference


def tree(*seqs, depth=8):
    t = ReferenceTree(depth)
    for i, s in enumerate(seqs):
        t.extend(i, s)
    return t


def test_most_frequent_continuation_and_probabilities():
    t = tree([1, 2, 3, 5, 1, 2, 3, 5, 9, 1, 2])
    d = t.speculate([7, 1, 2], SpecRule(max_spec_tokens=4, max_spec_factor=2.0, min_token_prob=0.1))
    # "1 2" occurs 3 times (the last at the end): 3 follows twice -> 2/3; "1 2 3" -> 5 always;
    # "1 2 3 5" twice, followed by 1 and by 9 -> a tie, the smaller id: 1 (1/3); then 2 (1/3).
    # Match 1 ("2") may draft only int(1 * 2.0) = 2 tokens (score 4/3) < match 2's score 2.
    assert d.match_len == 2
    assert d.token_ids == [3, 5, 1, 2]
    assert d.probs == [2 / 3, 2 / 3, 2 / 3 * 1 / 2, 2 / 3 * 1 / 2]
    assert d.parents == [-1, 0, 1, 2]
    assert d.score == sum(d.probs)


def test_tie_goes_to_smallest_token():
    t = tree([4, 8, 4, 6])
    d = t.speculate([4], SpecRule(max_spec_tokens=1, max_spec_factor=5.0, min_token_prob=0.0))
    assert d.token_ids == [6]  # 6 and 8 each follow "4" once
    assert d.probs == [0.5]


def test_spec_factor_limits_draft_by_match_length():
    seq = list(range(10)) * 2
    t = tree(seq, depth=32)
    short = t.speculate([3], SpecRule(max_spec_tokens=10, max_spec_factor=1.0, min_token_prob=0.0))
    # match of 1 token ("3") -> at most 1 draft; longer matches are not in the context
    assert short.match_len == 1 and len(short.token_ids) == 1
    longer = t.speculate([1, 2, 3], SpecRule(max_spec_tokens=10, max_spec_factor=1.0, min_token_prob=0.0))
    assert longer.match_len == 3 and longer.token_ids == [4, 5, 6]
    offset = t.speculate(
        [3], SpecRule(max_spec_tokens=10, max_spec_factor=1.0, max_spec_offset=2.0, min_token_prob=0.0)
    )
    assert offset.token_ids == [4, 5, 6]


def test_min_probability_stops_the_draft():
    # "5" occurs 4 times, followed by 6, 6, 7, 6 -> 3/4; "5 6" 3 times, followed by 0, 0, end -> 1/2
    t = tree([5, 6, 0, 5, 6, 0, 5, 7, 5, 6])
    rule = dict(max_spec_tokens=3, max_spec_factor=3.0)
    assert t.speculate([5], SpecRule(**rule, min_token_prob=0.5)).token_ids == [6, 0, 5]
    assert t.speculate([5], SpecRule(**rule, min_token_prob=0.7)).token_ids == [6]
    assert t.speculate([5], SpecRule(**rule, min_token_prob=0.8)).token_ids == []


def test_depth_bounds_match_and_draft():
    seq = [1, 2, 3, 4, 5, 6]
    t = tree(seq, seq, depth=4)
    rule = SpecRule(max_spec_tokens=8, max_spec_factor=8.0, min_token_prob=0.0)
    # substrings of at most 4 tokens: a 1-token match drafts 3 tokens at most
    assert t.speculate([2], rule).token_ids == [3, 4, 5]
    # matches of at most depth - 1 = 3 tokens; every match length scores 1 here, the longest wins
    d = t.speculate([1, 2, 3, 4, 5], rule)
    assert (d.match_len, d.token_ids) == (3, [6])


def test_cache_prefers_local_unless_global_scores_higher_and_evicts_oldest():
    cache = SuffixCacheReference(max_tree_depth=8, max_cached_requests=3)
    rule = SpecRule(max_spec_tokens=4, max_spec_factor=4.0, min_token_prob=0.0)
    for r, resp in enumerate([[1, 2, 3, 4], [1, 2, 9, 9], [5, 5, 5, 5]]):
        cache.start_request(r, [0])
        cache.add_active_response(r, resp)
        cache.stop_request(r)
    cache.start_request("new", [7, 1, 2])  # takes a global slot: request 0 (the oldest) goes
    assert list(cache.cached) == [1, 2, "new"]
    # the local tree has nothing after "2"; the global one has request 1's "1 2 9 9" only
    assert cache.speculate("new", [7, 1, 2], rule).token_ids == [9, 9]
    cache.add_active_response("new", [1, 2, 3])
    # local "7 1 2 1 2 3": "1 2" -> 1 or 3 (a tie, 1), then 2, 3: score 3/2; global: "1 2" -> 9 or 3
    # (a tie, 3), then the response ends: score 1/2
    d = cache.speculate("new", [1, 2], rule)
    assert (d.token_ids, d.score) == ([1, 2, 3], 1.5)

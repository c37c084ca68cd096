"""Well-formed random calls of ngram_match and ngram_append.

The tests' batches (every slot kind, planted repeats, binding budgets, invalid geometry)
plus what they leave out: attributes at the ends of their ranges, per-request tensors
shaped ``[B, 1]``, anchors (``ngram_anchor``) of every kind in half the calls, and now and then a
batch large enough for the CPU kernel to thread.
"""

from __future__ import annotations

import numpy as np

from tests.helpers.ngram_append_cases import random_append_case
from tests.helpers.ngram_cases import random_anchors, random_case

from .values import INT32_MAX, INT32_MIN


def ngram_call(rng: np.random.Generator, append: bool) -> tuple[dict, dict]:
    big = rng.random() < 0.01  # > 2^16 tokens to search: the threaded path
    size = {"batch": int(rng.integers(40, 65)), "max_model_len": 4096} if big else {}
    arrays, attrs = (random_append_case if append else random_case)(rng, **size)
    batch, max_len = arrays["token_ids_all"].shape
    roll = rng.random()
    if roll < 0.05 and not big:  # (the reference's literal search is cubic in L for n near L)
        attrs["max_ngram_size"] = int(rng.choice([INT32_MAX, max_len + 1, 2**20]))
        attrs["min_ngram_size"] = int(rng.choice([1, attrs["max_ngram_size"]]))
    elif roll < 0.1:
        attrs["min_ngram_size"] = attrs["max_ngram_size"]
    roll = rng.random()
    if roll < 0.05:
        attrs["token_budget"] = int(rng.choice([INT32_MAX, INT32_MIN, 1, batch, batch + 1]))
    if rng.random() < 0.5:  # anchored drafting: valid, stale, -1, future, negative and extreme anchors
        arrays["ngram_anchor"] = random_anchors(rng, arrays)
    return arrays, attrs

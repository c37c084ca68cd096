"""REJECTION verify batches and a chi-square check (numpy only): shared by CPU and GPU tests."""

from __future__ import annotations

import math

import numpy as np

from tests.helpers.op_names import PROBABILITY_NAMES
from tests.helpers.slot_inputs import decode_slots

# Inputs of verify_rejection / verify_draft_tokens(strategy="rejection"), in order.
ARRAY_NAMES = PROBABILITY_NAMES

END = 10**6  # an end token outside every test vocabulary: never drawn


def distribution_case(p_rows: np.ndarray, q_rows: np.ndarray, slots: int, *, seed: int = 0) -> dict:
    """``slots`` decode slots, each drafting ``K = len(q_rows)`` tokens: draft ``i`` is drawn from
    ``q_rows[i]`` (numpy RNG), target row ``i`` is ``p_rows[i]`` (``K + 1`` rows), request seeds and
    positions all differ."""
    rng = np.random.default_rng(seed)
    k, vocab = q_rows.shape
    assert p_rows.shape == (k + 1, vocab)
    drafts = np.full((slots, k + 1), 7, np.int64)
    for i in range(k):
        q = q_rows[i].astype(np.float64)
        drafts[:, i + 1] = rng.choice(vocab, size=slots, p=q / q.sum())
    q_full = np.concatenate([q_rows, np.zeros((1, vocab), np.float32)]).astype(np.float32)
    return {
        "accept_tokens": np.zeros((slots, k + 1), np.int64),
        "accept_num": np.zeros(slots, np.int32),
        "draft_tokens": drafts,
        "target_probs": np.tile(p_rows.astype(np.float32), (slots, 1)),
        "draft_probs": np.tile(q_full, (slots, 1)),
        **decode_slots(
            slots,
            k + 1,
            seed=np.arange(slots, dtype=np.int64) * 1_000_003 + seed * 7919 + 11,
            step_idx=(np.arange(slots, dtype=np.int64) * 13) % 997,
            end_token=END,
        ),
    }


def random_rows(rng: np.random.Generator, rows: int, vocab: int, zero_fraction: float = 0.0) -> np.ndarray:
    x = rng.random((rows, vocab)) ** 2
    x[rng.random((rows, vocab)) < zero_fraction] = 0
    x[np.arange(rows), rng.integers(0, vocab, rows)] += 0.05  # never an all-zero row
    return (x / x.sum(axis=1, keepdims=True)).astype(np.float32)


def distribution_pairs(seed: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Named ``(p [4, V], q [3, V])`` pairs for the distribution tests of REJECTION and BLOCK (V = 6): row ``i``
    of ``q`` drafts position ``i``, row ``i`` of ``p`` judges it, ``p``'s last row is the bonus."""
    rng = np.random.default_rng(seed)
    v = 6
    p, q = random_rows(rng, 4, v), random_rows(rng, 3, v)
    q_zero = q.copy()
    q_zero[:, :2] = 0  # q(x) = 0 where p(x) > 0: only a residual can emit x
    q_zero /= q_zero.sum(axis=1, keepdims=True)
    one_hot = np.zeros((3, v), np.float32)
    one_hot[np.arange(3), [1, 4, 2]] = 1  # n-gram-like drafts
    return {
        "random": (p, q),
        "q_zero": (p, q_zero),
        "p_zero": (random_rows(rng, 4, v, zero_fraction=0.4), q),  # p(x) = 0 where q(x) > 0: never emitted
        "p_equals_q": (p, p[:3]),
        "close": (p, (0.8 * p[:3] + 0.2 * q).astype(np.float32)),  # long blocks: weights below 1 matter
        "one_hot_q": (p, one_hot),
    }


def random_case(rng: np.random.Generator, *, batch: int | None = None) -> dict:
    """A batch of every slot kind with random p, q rows (zeros included), drafts that are often
    likely under p, stops, blocks, ends, max_dec_len limits, short row ranges and bad drafts."""
    b = batch or int(rng.integers(1, 9))
    k = int(rng.integers(0, 5))
    vocab = int(rng.choice([1, 3, 8, 40]))
    enc = np.where(rng.random(b) < 0.2, rng.integers(1, 9, b), 0).astype(np.int32)
    this_time = np.where(enc > 0, enc, rng.integers(0, k + 2, b)).astype(np.int32)
    need = np.where(enc > 0, 1, np.maximum(this_time, 0))
    have = np.where(rng.random(b) < 0.9, need, rng.integers(0, k + 2, b))
    cu = np.concatenate([[0], np.cumsum(have)]).astype(np.int32)
    rows = int(cu[-1]) + int(rng.integers(0, 3))
    p = random_rows(rng, max(rows, 1), vocab, zero_fraction=0.3)[:rows]
    q = random_rows(rng, max(rows, 1), vocab, zero_fraction=0.3)[:rows]
    same = rng.random(rows) < 0.2
    q[same] = p[same]
    if rows and rng.random() < 0.3:
        p[int(rng.integers(0, rows))] = 0  # a target row with no valid entry
    drafts = rng.integers(-1, vocab + 1, size=(b, k + 1)).astype(np.int64)
    step = rng.integers(0, 50, b).astype(np.int64)
    ends = rng.choice(np.arange(-1, vocab), size=int(rng.integers(1, 3))).astype(np.int64)
    return {
        "accept_tokens": rng.integers(-5, 5, size=(b, k + 1)).astype(np.int64),
        "accept_num": rng.integers(-1, 3, b).astype(np.int32),
        "draft_tokens": drafts,
        "target_probs": p,
        "draft_probs": q,
        "seed": rng.integers(-(2**62), 2**62, b).astype(np.int64),
        "step_idx": step,
        "stop_flags": rng.random(b) < 0.1,
        "is_block_step": rng.random(b) < 0.1,
        "seq_lens_encoder": enc,
        "seq_lens_this_time": this_time,
        "cu_seqlens_q_output": cu,
        "reasoning_status": rng.integers(0, 3, b).astype(np.int32) if rng.random() < 0.3 else None,
        "max_dec_len": np.where(rng.random(b) < 0.7, 10**6, step + rng.integers(0, k + 2, b)).astype(np.int64),
        "end_tokens": ends,
    }


def chi2_critical(df: int, z: float = 3.719) -> float:
    """Wilson-Hilferty upper critical value of chi-square(df); z = 3.719 is a 1e-4 tail."""
    h = 2.0 / (9.0 * df)
    return df * (1.0 - h + z * math.sqrt(h)) ** 3


def chi2_matches(counts: np.ndarray, probs: np.ndarray) -> tuple[bool, float, float]:
    """(fits, statistic, critical): observed counts against a distribution at significance 1e-4.
    Tokens of probability 0 must never be observed."""
    probs = np.asarray(probs, np.float64)
    probs = probs / probs.sum()
    n = counts.sum()
    support = probs > 0
    if counts[~support].any():
        return False, math.inf, 0.0
    expected = n * probs[support]
    stat = float((((counts[support] - expected) ** 2) / expected).sum())
    df = max(int(support.sum()) - 1, 1)
    crit = chi2_critical(df)
    return stat <= crit, stat, crit

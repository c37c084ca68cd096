"""REJECTION (reference): exact arithmetic, losslessness over many seeds, batch invariance."""

from __future__ import annotations

import numpy as np
import pytest

from fastspec.reference import rejection as rj
from fastspec.reference.mass import prob_mass
from fastspec.reference.rng import STREAM_ACCEPT, STREAM_RESAMPLE, rand64
from tests.helpers.rejection_cases import (
    ARRAY_NAMES,
    END,
    chi2_matches,
    distribution_case,
    distribution_pairs,
    random_case,
)


def run(arrays: dict, **attrs):
    return rj.verify_rejection(*(arrays[name] for name in ARRAY_NAMES), **attrs)


def emitted_counts(arrays: dict, position: int, vocab: int) -> np.ndarray:
    tokens, num = run(arrays)
    reached = num > position
    return np.bincount(tokens[reached, position], minlength=vocab)


def test_arithmetic_by_hand():
    p = np.array([0.5, 0.25, 0.25, 0.0], np.float32)
    q = np.array([0.125, 0.75, 0.125, 0.0], np.float32)
    seed, pos = 1234, 56
    # draft 1: mp = 2^38, mq = 3 * 2^38; accepted iff a < mp
    a = (rand64(seed, pos, STREAM_ACCEPT) * (3 << 38)) >> 64
    assert rj.rejection_accepts(p, q, 1, seed, pos) == (a < (1 << 38))
    # residual max(p - q, 0) = [0.375, 0, 0.125, 0] in masses, ascending ids
    residual = np.array([3 << 37, 0, 1 << 37, 0], np.int64)
    point = (rand64(seed, pos, STREAM_RESAMPLE) * int(residual.sum())) >> 64
    expected = int(np.searchsorted(np.cumsum(residual), point, side="right"))
    assert rj.rejection_residual(p, q, seed, pos) == expected
    # draft 0 (p >= q) is always accepted; q(x) = 0 or x out of range never
    assert all(rj.rejection_accepts(p, q, 0, s, pos) for s in range(50))
    assert not rj.rejection_accepts(p, q, 3, seed, pos)
    assert not rj.rejection_accepts(p, q, 4, seed, pos) and not rj.rejection_accepts(p, q, -1, seed, pos)
    assert prob_mass(p).sum() == 1 << 40


def test_arithmetic_through_verify():
    p = np.array([[0.5, 0.25, 0.25, 0.0], [0.1, 0.2, 0.3, 0.4]], np.float32)
    q = np.array([[0.125, 0.75, 0.125, 0.0]], np.float32)
    case = distribution_case(p, q, 64)
    tokens, num = run(case)
    for b in range(64):
        seed, pos, d = int(case["seed"][b]), int(case["step_idx"][b]), int(case["draft_tokens"][b, 1])
        if rj.rejection_accepts(p[0], q[0], d, seed, pos):
            assert num[b] == 2 and tokens[b, 0] == d
            assert tokens[b, 1] == rj.rejection_bonus(p[1], seed, pos + 1)
        else:
            assert num[b] == 1 and tokens[b, 0] == rj.rejection_residual(p[0], q[0], seed, pos)


SLOTS = 6000


PAIRS = distribution_pairs(77)  # name -> (p, q)


@pytest.mark.parametrize("name", list(PAIRS))
def test_emitted_tokens_follow_the_target(name):
    p, q = PAIRS[name]
    vocab = p.shape[1]
    case = distribution_case(p, q, SLOTS, seed=3)
    tokens, num = run(case)
    for position in range(2):  # the token at a position, whenever it is reached, follows that row's p
        reached = num > position
        counts = np.bincount(tokens[reached, position], minlength=vocab)
        fits, stat, crit = chi2_matches(counts, p[position])
        assert fits, f"{name} position {position}: chi2 {stat:.1f} > {crit:.1f}, counts {counts}"
    if name == "p_equals_q":
        assert (num == q.shape[0] + 1).all()  # p = q accepts every draft


def test_the_check_has_power():
    # accepting every draft emits q, not p: the same test must see it
    p, q = PAIRS["random"]
    case = distribution_case(p, q, SLOTS, seed=3)
    tokens, num = run(case, accept_all=True)
    fits, stat, crit = chi2_matches(np.bincount(tokens[:, 0], minlength=p.shape[1]), p[0])
    assert not fits, f"chi2 {stat:.1f} <= {crit:.1f}"


def test_batch_invariance():
    rng = np.random.default_rng(5)
    case = random_case(rng, batch=8)
    while not (case["seq_lens_encoder"] == 0).any():
        case = random_case(rng, batch=8)
    full_tokens, full_num = run(case)
    for b in range(8):
        lo, hi = int(case["cu_seqlens_q_output"][b]), int(case["cu_seqlens_q_output"][b + 1])
        single = {
            name: (
                value[b : b + 1]
                if name not in ("target_probs", "draft_probs", "cu_seqlens_q_output", "end_tokens")
                and value is not None
                else value
            )
            for name, value in case.items()
        }
        single["target_probs"] = case["target_probs"][lo:hi]
        single["draft_probs"] = case["draft_probs"][lo:hi]
        single["cu_seqlens_q_output"] = np.array([0, hi - lo], np.int32)
        tokens, num = run(single)
        assert num[0] == full_num[b] and (tokens[0] == full_tokens[b]).all(), f"slot {b}"


def test_skipped_drafts_take_the_bonus_from_p():
    p = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0]], np.float32)
    q = np.array([[1.0, 0.0, 0.0]], np.float32)
    case = distribution_case(p, q, 4)
    tokens, num = run(case, reject_all=True)
    assert (num == 1).all() and (tokens[:, 0] == 2).all()  # bonus from p (2), not the residual
    tokens, num = run(case)
    assert (num == 1).all() and (tokens[:, 0] == 2).all()  # draft 0 has p = 0: rejected, residual = 2
    tokens, num = run(case, accept_all=True)
    assert (num == 2).all() and (tokens[:, 1] == 1).all()


def test_empty_target_row_ends_the_request():
    p = np.zeros((2, 3), np.float32)
    q = np.array([[0.0, 1.0, 0.0]], np.float32)
    tokens, num = run(distribution_case(p, q, 3))
    assert (num == 1).all() and (tokens[:, 0] == END).all()


def test_max_dec_len_and_end_tokens():
    p = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], np.float32)
    case = distribution_case(p, p[:1], 2)
    case["max_dec_len"][:] = case["step_idx"] + 1  # the accepted draft is the last allowed token
    tokens, num = run(case)
    assert (num == 1).all() and (tokens[:, 0] == END).all()
    case["max_dec_len"][:] = 10**9
    case["end_tokens"] = np.array([1], np.int64)  # the draft is an end token: stop after it
    tokens, num = run(case)
    assert (num == 1).all() and (tokens[:, 0] == 1).all()


def test_random_batches_never_emit_minus_one():
    rng = np.random.default_rng(11)
    for _ in range(200):
        case = random_case(rng)
        tokens, num = run(case)
        for b, n in enumerate(num):
            assert (tokens[b, :n] != -1).all() or -1 in case["end_tokens"]
            assert (tokens[b, n:] == -1).all()

"""verify_draft_tokens with strategy BLOCK: the Paddle op and the bindings' CPU path against the numpy
reference (f32, f16, bf16, edge cases), its integer arithmetic, bad inputs, and its statistics:
lossless (chi-square, per position and on whole generated sequences) and accepting at least as
many drafts as REJECTION (empirical means against the exact expectations)."""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import paddle
import pytest

import fastspec.ops as ops
from fastspec import reference as ref
from fastspec.reference import block as bk
from fastspec.reference.mass import MASS_SCALE, prob_mass
from fastspec.reference.rng import STREAM_BLOCK, rand64
from tests.helpers.block_cases import exact_accepted, likely_case, markov_generation, markov_joint
from tests.helpers.probability_verify import PROBS, assert_same, check_random_batches, positional, run_bindings, run_op
from tests.helpers.rejection_cases import (
    ARRAY_NAMES,
    chi2_matches,
    distribution_case,
    distribution_pairs,
    random_case,
    random_rows,
)
from tests.helpers.static_graph import run_static

run_op = partial(run_op, strategy="block")
run_bindings = partial(run_bindings, strategy="block")


def run_reference(arrays: dict, **attrs):
    return ref.verify_block(*(arrays[name] for name in ARRAY_NAMES), **attrs)


# -- bit for bit against the reference ---------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_random_batches_match_the_reference(dtype):
    check_random_batches("block", dtype, {"float32": 21, "float16": 22, "bfloat16": 23}[dtype], cases=150)


@pytest.mark.parametrize("k, vocab", [(1, 5), (3, 7), (6, 40), (2, 151936)])
def test_likely_drafts_match_the_reference(k, vocab):
    """Every accepted length from 0 to K occurs (large vocabularies too)."""
    rng = np.random.default_rng(k * 1000 + vocab)
    batch = 6 if vocab > 1000 else 200
    arrays = likely_case(rng, batch, k, vocab)
    expected = run_reference(arrays)
    assert_same(run_bindings(arrays), expected, "bindings")
    assert_same(run_op(arrays)[0], expected, "op")
    if vocab < 1000:
        assert set(expected[1].tolist()) == set(range(1, k + 2)), "not every block length was reached"


def test_no_drafts_is_rejection_bit_for_bit():
    """K = 0: nothing to judge, the bonus is REJECTION's draw from p."""
    rng = np.random.default_rng(31)
    for case in range(100):
        arrays = random_case(rng)
        arrays["draft_tokens"] = arrays["draft_tokens"][:, :1].copy()
        arrays["accept_tokens"] = arrays["accept_tokens"][:, :1].copy()
        assert_same(run_bindings(arrays), run_bindings(arrays, strategy="rejection"), f"case {case}")


def test_all_accepted_and_first_rejected():
    p = np.array([[0.5, 0.25, 0.25, 0.0], [0.1, 0.2, 0.3, 0.4], [0.0, 0.0, 0.5, 0.5]], np.float32)
    case = distribution_case(p, p[:2], 50, seed=4)  # q = p: every weight stays 1, the block is always accepted
    tokens, num = run_bindings(case)
    assert (num == 3).all()
    np.testing.assert_array_equal(tokens[:, :2], case["draft_tokens"][:, 1:])
    assert set(tokens[:, 2].tolist()) <= {2, 3}  # the bonus from p's last row
    assert_same((tokens, num), run_reference(case))
    q = p[:2].copy()
    q[0] = [0.0, 0.0, 0.0, 1.0]  # the first draft has p = 0: no prefix survives, the residual is p's row 0
    case = distribution_case(p, q, 50, seed=5)
    tokens, num = run_bindings(case)
    assert (num == 1).all() and set(tokens[:, 0].tolist()) <= {0, 1, 2}
    assert_same((tokens, num), run_reference(case))


def test_skipped_slots_behave_as_rejection():
    """Prefill, reject_all, reasoning slots and accept_all take REJECTION's path."""
    rng = np.random.default_rng(41)
    for case in range(60):
        arrays = random_case(rng)
        for attrs in ({"accept_all": True}, {"reject_all": True}):
            assert_same(
                run_bindings(arrays, **attrs),
                run_bindings(arrays, strategy="rejection", **attrs),
                f"case {case} {attrs}",
            )


def test_batch_invariance():
    rng = np.random.default_rng(6)
    arrays = likely_case(rng, 8, 3, 9)
    full = run_bindings(arrays)
    order = rng.permutation(8)
    permuted = {
        name: value[order] if name not in PROBS + ("cu_seqlens_q_output", "end_tokens", "reasoning_status") else value
        for name, value in arrays.items()
    }
    for name in PROBS:
        permuted[name] = arrays[name].reshape(8, 4, -1)[order].reshape(32, -1)
    got = run_bindings(permuted)
    np.testing.assert_array_equal(got[0], full[0][order])
    np.testing.assert_array_equal(got[1], full[1][order])


# -- the integer arithmetic -----------------------------------------------------------------------------------


def test_mass_arithmetic_is_exact():
    rng = np.random.default_rng(0)
    values = [0, 1, 2, MASS_SCALE - 1, MASS_SCALE, *rng.integers(0, MASS_SCALE, 40).tolist()]
    for w in values:
        for m in values[:12]:
            assert bk.mass_mul(w, m) == (w * m) >> 40
            if m > 0:
                assert bk.mass_ratio(w, m) == min(w * MASS_SCALE // m, MASS_SCALE)
    column = np.array(values, np.int64)
    assert (bk.mass_mul(12345678901, column) == [(12345678901 * int(m)) >> 40 for m in values]).all()


def test_decision_by_hand():
    """Two drafts: the whole block with chance w_2, the one-draft prefix with chance gain / loss."""
    p = np.array([[0.5, 0.25, 0.25], [0.125, 0.375, 0.5], [0.25, 0.25, 0.5]], np.float32)
    q = np.array([[0.25, 0.5, 0.25], [0.5, 0.25, 0.25]], np.float32)
    mp, mq = prob_mass(p), prob_mass(q)
    case = distribution_case(p, q, 400, seed=9)
    tokens, num = run_bindings(case)
    assert_same((tokens, num), run_reference(case))
    one = 1 << 40
    for b in range(400):
        d1, d2 = int(case["draft_tokens"][b, 1]), int(case["draft_tokens"][b, 2])
        seed, step = int(case["seed"][b]), int(case["step_idx"][b])
        w1 = min(int(mp[0, d1]) * one // int(mq[0, d1]), one)
        coin2, coin1 = rand64(seed, step, STREAM_BLOCK, 2), rand64(seed, step, STREAM_BLOCK, 1)
        if (coin2 * int(mq[1, d2])) >> 64 < (w1 * int(mp[1, d2])) >> 40:
            expected = 3
        else:
            scaled = (w1 * mp[1].astype(object)) >> 40
            gain = sum(max(int(s) - int(m), 0) for s, m in zip(scaled, mq[1]))
            loss = sum(max(int(m) - int(s), 0) for s, m in zip(scaled, mq[1]))
            expected = 2 if (coin1 * loss) >> 64 < gain else 1
        assert num[b] == expected, f"slot {b}"


# -- bad inputs -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("missing", PROBS)
def test_missing_probabilities_name_the_argument(missing):
    p = np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]], np.float32)
    arrays = distribution_case(p, p[:1], 2)
    tensors = {name: None if value is None else paddle.to_tensor(value) for name, value in arrays.items()}
    tensors[missing] = None
    with pytest.raises(
        ValueError, match=f"verify_draft_tokens.*{missing}.*'block'|verify_draft_tokens.*'block'.*{missing}"
    ):
        ops.verify_draft_tokens(
            *positional(tensors),
            strategy="block",
            target_probs=tensors["target_probs"],
            draft_probs=tensors["draft_probs"],
        )
    arrays[missing] = None
    with pytest.raises(ValueError, match=missing):
        run_bindings(arrays)


def test_static_graph_build_and_run():
    p = np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5], [0.1, 0.1, 0.8]], np.float32)
    arrays = distribution_case(p, np.array([[0.4, 0.6, 0.0], [0.3, 0.3, 0.4]], np.float32), 64, seed=2)
    got = run_static(
        arrays,
        lambda feeds: ops.verify_draft_tokens(
            *positional(feeds), strategy="block", target_probs=feeds["target_probs"], draft_probs=feeds["draft_probs"]
        ),
    )
    assert_same(got, run_reference(arrays))


# -- statistics -----------------------------------------------------------------------------------------------

SLOTS = 6000


PAIRS = distribution_pairs(78)  # name -> (p, q)


@pytest.mark.parametrize("name", list(PAIRS))
def test_emitted_tokens_follow_the_target(name):
    """Wherever a position is reached, its token follows that position's p (chi-square, 1e-4)."""
    p, q = PAIRS[name]
    tokens, num = run_bindings(distribution_case(p, q, SLOTS, seed=3))
    for position in range(4):
        reached = num > position
        counts = np.bincount(tokens[reached, position], minlength=p.shape[1])
        fits, stat, crit = chi2_matches(counts, p[position])
        assert fits, f"{name} position {position}: chi2 {stat:.1f} > {crit:.1f}, counts {counts}"


def _verify_numpy(arrays: dict, strategy: str):
    return run_bindings(arrays, strategy=strategy)


def _markov_models():
    rng = np.random.default_rng(5)
    vocab = 3
    target = random_rows(rng, vocab + 1, vocab, zero_fraction=0.2)
    draft = (0.5 * target + 0.5 * random_rows(rng, vocab + 1, vocab)).astype(np.float32)
    return target, draft


def test_generated_sequences_follow_the_target():
    """Sequences of 4 tokens generated step by step (K = 3, the rows depend on the drafts) have
    the target's joint law over all 81 of them; accepting whole blocks without the rule does not."""
    target, draft = _markov_models()
    length, sequences = 4, 12000
    joint = markov_joint(target, length)
    got = markov_generation(_verify_numpy, "block", target, draft, sequences=sequences, length=length, k=3, seed=1)
    counts = np.bincount(np.ravel_multi_index(got.T, (3,) * length), minlength=joint.size)
    fits, stat, crit = chi2_matches(counts, joint)
    assert fits, f"chi2 {stat:.1f} > {crit:.1f}"

    def accept_everything(arrays, strategy):
        return run_bindings(arrays, strategy=strategy, accept_all=True)

    wrong = markov_generation(accept_everything, "block", target, draft, sequences=sequences, length=length, k=3)
    counts = np.bincount(np.ravel_multi_index(wrong.T, (3,) * length), minlength=joint.size)
    assert not chi2_matches(counts, joint)[0], "the check has no power"


def test_no_coin_comes_back_in_a_later_step():
    """Deterministic drafts (one-hot q): BLOCK's accepted lengths and corrections have exactly
    REJECTION's law, so over whole generations (many steps per sequence, the seeds fixed per
    sequence) the mean accepted drafts per step must agree. A coin reused by a later step, e.g.
    one keyed by the position of a prefix BLOCK rejected, fails more often than chance: that
    lowered the mean by about 8 % on the demo."""
    vocab, k = 6, 4
    target = np.full((vocab + 1, vocab), 0.3 / (vocab - 1), np.float32)
    favoured = (np.arange(vocab + 1) * 5 + 1) % vocab
    target[np.arange(vocab + 1), favoured] = 0.7
    draft = np.zeros_like(target)
    draft[np.arange(vocab + 1), favoured] = 1.0
    means, errors = {}, {}
    for strategy in ("rejection", "block"):
        accepted = []

        def verify(arrays, name):
            tokens, num = run_bindings(arrays, strategy=name)
            accepted.extend((num - 1).tolist())
            return tokens, num

        markov_generation(verify, strategy, target, draft, sequences=1500, length=24, k=k, seed=4)
        means[strategy], errors[strategy] = np.mean(accepted), np.std(accepted) / math.sqrt(len(accepted))
    assert abs(means["block"] - means["rejection"]) < 4.5 * math.hypot(errors["block"], errors["rejection"]), means


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_block_accepts_at_least_as_much_as_rejection(seed):
    """Same p, q, drafts and seeds for both strategies. Each empirical mean of accepted drafts is
    within 4.5 standard errors of its exact expectation, BLOCK's exact expectation is at least
    REJECTION's, and BLOCK's empirical mean is not below REJECTION's beyond the tolerance."""
    rng = np.random.default_rng(seed)
    k, vocab, slots = 3, 5, 20000
    p, q = random_rows(rng, k + 1, vocab, zero_fraction=0.2), random_rows(rng, k, vocab, zero_fraction=0.2)
    exact_block, exact_rejection = exact_accepted(p[:k], q)
    assert exact_block >= exact_rejection
    case = distribution_case(p, q, slots, seed=seed)
    means, errors = {}, {}
    for strategy, exact in (("block", exact_block), ("rejection", exact_rejection)):
        accepted = run_bindings(case, strategy=strategy)[1] - 1
        means[strategy], errors[strategy] = accepted.mean(), accepted.std() / math.sqrt(slots)
        assert abs(means[strategy] - float(exact)) < 4.5 * errors[strategy], (strategy, means[strategy], float(exact))
    gap_error = math.hypot(errors["block"], errors["rejection"])
    assert means["block"] - means["rejection"] > -4.5 * gap_error, means


def test_block_gains_on_the_papers_kind_of_example():
    """Two tokens, the target favouring b, the draft a (Sun et al.'s motivating example): BLOCK
    accepts clearly more than REJECTION, far beyond the noise of 20000 slots."""
    k, slots = 2, 20000
    p = np.tile(np.array([[1 / 3, 2 / 3]], np.float32), (k + 1, 1))
    q = np.tile(np.array([[2 / 3, 1 / 3]], np.float32), (k, 1))
    exact_block, exact_rejection = exact_accepted(p[:k], q)
    case = distribution_case(p, q, slots, seed=8)
    block = run_bindings(case)[1] - 1
    rejection = run_bindings(case, strategy="rejection")[1] - 1
    error = math.hypot(block.std(), rejection.std()) / math.sqrt(slots)
    assert float(exact_block - exact_rejection) > 8 * error
    assert block.mean() - rejection.mean() > 4 * error
    assert abs(block.mean() - float(exact_block)) < 4.5 * block.std() / math.sqrt(slots)

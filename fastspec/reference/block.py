"""Reference BLOCK verification (docs/ops/verify_draft_tokens.md, **BLOCK**).

Block verification (Sun et al., "Block Verification Accelerates Speculative Decoding", ICLR 2025)
judges the drafts as one block instead of one by one: it keeps a *weight* ``w_i`` per prefix of
``i`` drafts, ``w_0 = 1``, ``w_i = min(w_{i-1} * p(d_i) / q(d_i), 1)``, and accepts the longest
prefix ``i`` whose own coin lands under ``h_i``:

- ``h_n = w_n`` for the whole block of ``n`` drafts (drawn as ``u * q(d_n) < w_{n-1} * p(d_n)``);
- ``h_i = S_i / D_i`` for a prefix ``0 < i < n``, with ``S_i = sum_v max(w_i p_v - q_v, 0)`` and
  ``D_i = sum_v max(q_v - w_i p_v, 0)`` over the row that judges draft ``i + 1``;
- none of them: no draft is accepted (``i = 0``).

After accepting ``i < n`` drafts the correction is drawn from ``max(w_i p - q, 0)`` (REJECTION's
residual when ``i = 0``; ``p`` if that is empty); after all ``n`` the bonus is drawn from ``p``.
The emitted tokens follow ``p`` exactly and, in expectation, at least as many drafts are accepted
as REJECTION accepts (the paper proves the rule optimal).

Everything is integer arithmetic on the masses of ``fastspec.reference.mass`` (``2^40`` = 1):
``mass_mul(w, m) = floor(w * m / 2^40)`` and ``mass_ratio(a, m) = min(floor(a * 2^40 / m), 2^40)``.
The coin of prefix ``i`` is ``rand64(seed, step_idx, BLOCK, i)``: keyed by the step and the prefix,
never by a draft's position, because the coins of the prefixes BLOCK rejects must not come back
in a later step that covers those positions. A coin is read as ``(rand64 * total) >> 64 < accepted mass``. A draft < 0 or >= V, or one
with ``q = 0``, makes its weight and every later one 0: such a prefix is never accepted.
``accept_all`` and the skipped slots (prefill, ``reject_all``, reasoning) behave as REJECTION's.
"""

from __future__ import annotations

import numpy as np

from fastspec.core.streams import STREAM_BLOCK, STREAM_RESAMPLE
from fastspec.reference.mass import MASS_SCALE, draw, prob_mass
from fastspec.reference.rejection import rejection_bonus
from fastspec.reference.rng import rand64
from fastspec.reference.slots import SlotInputs, probability_strategy


def mass_mul(weight: int, mass: np.ndarray | int) -> np.ndarray | int:
    """``floor(weight * mass / 2^40)`` for ``weight, mass <= 2^40``, exact in int64 (no 80-bit product)."""
    high, low = weight >> 20, weight & ((1 << 20) - 1)
    return (high * mass + ((low * mass) >> 20)) >> 20


def mass_ratio(numerator: int, mass: int) -> int:
    """``min(floor(numerator * 2^40 / mass), 2^40)`` for ``mass > 0``."""
    if numerator >= mass:
        return MASS_SCALE
    return (numerator << 40) // mass


def _masses(row: np.ndarray) -> np.ndarray:
    return prob_mass(np.asarray(row, dtype=np.float32))


def block_weights(target: np.ndarray, draft: np.ndarray, drafts: list[int], first: int) -> list[int]:
    """``[w_0, ..., w_n]`` of the drafts judged by rows ``first .. first + n - 1``."""
    vocab, weights = target.shape[1], [MASS_SCALE]
    for j, d in enumerate(drafts):
        w = weights[-1]
        if w > 0 and 0 <= d < vocab:
            mq = int(_masses(draft[first + j, d : d + 1])[0])
            mp = int(_masses(target[first + j, d : d + 1])[0])
            w = mass_ratio(int(mass_mul(w, mp)), mq) if mq > 0 else 0
        else:
            w = 0
        weights.append(w)
    return weights


def block_residual(p_row: np.ndarray, q_row: np.ndarray, weight: int) -> np.ndarray:
    """The masses ``max(mass_mul(weight, mp) - mq, 0)`` of a row."""
    return np.maximum(mass_mul(weight, _masses(p_row)) - _masses(q_row), 0)


def block_accepted(target: np.ndarray, draft: np.ndarray, drafts: list[int], first: int, seed: int, step: int) -> int:
    """How many of ``drafts`` block verification accepts (the longest prefix whose coin succeeds)."""
    n = len(drafts)
    weights = block_weights(target, draft, drafts, first)
    for i in range(n, 0, -1):
        if weights[i] == 0:
            continue  # also covers an invalid draft i and w_{i-1} == 0
        coin = rand64(seed, step, STREAM_BLOCK, i)
        if i == n:
            d = drafts[n - 1]
            mq = int(_masses(draft[first + n - 1, d : d + 1])[0])
            mp = int(_masses(target[first + n - 1, d : d + 1])[0])
            if mq > 0 and (coin * mq) >> 64 < int(mass_mul(weights[n - 1], mp)):
                return n
            continue
        p_row, q_row = _masses(target[first + i]), _masses(draft[first + i])
        scaled = mass_mul(weights[i], p_row)
        gain, loss = int(np.maximum(scaled - q_row, 0).sum()), int(np.maximum(q_row - scaled, 0).sum())
        if (coin * loss) >> 64 < gain:
            return i
    return 0


def block_correction(
    target: np.ndarray, draft: np.ndarray, row: int, weight: int, seed: int, position: int
) -> int | None:
    """The correction at ``row`` after a rejected block prefix of weight ``weight``."""
    residual = block_residual(target[row], draft[row], weight)
    if int(residual.sum()) == 0:
        return rejection_bonus(target[row], seed, position)
    return draw(residual, rand64(seed, position, STREAM_RESAMPLE))


def block_rules(
    target: np.ndarray, draft: np.ndarray, draft_tokens: np.ndarray, slots: SlotInputs, accept_all: bool
) -> dict:
    """BLOCK's ``decide`` and ``correction`` (``verify_slots``' hooks) over the widened ``target`` and ``draft``
    probabilities ``[T, V]``."""
    seeds, steps, cu = slots.seed, slots.step_idx, slots.cu_seqlens_q_output
    drafts_of = np.asarray(draft_tokens)

    def slot_drafts(b: int, count: int) -> list[int]:
        return [int(d) for d in drafts_of[b, 1 : count + 1]]

    def decide(b: int, first: int, count: int) -> int:
        return block_accepted(target, draft, slot_drafts(b, count), first, int(seeds[b]), int(steps[b]))

    def correction(b: int, t: int, position: int, rejected: bool) -> int | None:
        if not rejected:
            return rejection_bonus(target[t], int(seeds[b]), position)
        accepted = t - int(cu[b])
        weight = MASS_SCALE if accept_all else block_weights(target, draft, slot_drafts(b, accepted), int(cu[b]))[-1]
        return block_correction(target, draft, t, weight, int(seeds[b]), position)

    return {"accepts": None, "decide": decide, "correction": correction}


verify_block = probability_strategy("block", block_rules)

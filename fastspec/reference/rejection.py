"""Reference REJECTION verification (docs/ops/verify_draft_tokens.md, **REJECTION**).

Drafts from a draft model come with the draft distribution ``q`` of each draft; the target
distribution is ``p``. Draft ``d`` at row ``t`` is accepted iff ``u * q(d) < p(d)``, written in
masses as ``a = (rand64(seed, pos, ACCEPT) * mq) >> 64; accept iff mq > 0 and a < mp``. At the
first rejection the token is drawn from the residual ``max(p - q, 0)`` (ascending ids, stream
RESAMPLE); after full acceptance the bonus is drawn from ``p`` (ascending ids, RESAMPLE). The
emitted tokens then follow ``p`` exactly (up to the 2^-40 mass quantum).

Choices of ours where the shared contract is silent (docs/ops/verify_draft_tokens.md restates them):
- a draft < 0 is never accepted (as in every strategy); a draft >= V has ``mq = 0`` and is
  rejected (``accept_all`` accepts any draft >= 0, as in every strategy);
- drafts that are skipped (prefill, ``reject_all``, ``reasoning_status == 1``) were never
  judged, so the token at position 0 is the *bonus* draw from ``p`` (not the residual);
- a target row without any valid entry (total mass 0) emits ``end_tokens[0]`` (the request
  ends cleanly, as a TOPP row without candidates does).
"""

from __future__ import annotations

import numpy as np

from fastspec.core.streams import STREAM_ACCEPT, STREAM_RESAMPLE
from fastspec.reference.mass import draw, prob_mass
from fastspec.reference.rng import rand64
from fastspec.reference.slots import SlotInputs, probability_strategy


def _masses(row: np.ndarray) -> np.ndarray:
    return prob_mass(np.asarray(row, dtype=np.float32))


def rejection_accepts(p_row: np.ndarray, q_row: np.ndarray, draft: int, seed: int, position: int) -> bool:
    """The acceptance test of draft ``draft`` (not covering ``accept_all``)."""
    vocab = len(p_row)
    if draft < 0 or draft >= vocab:
        return False
    mp = int(_masses(p_row[draft : draft + 1])[0])
    mq = int(_masses(q_row[draft : draft + 1])[0])
    if mq <= 0:
        return False
    a = (rand64(seed, position, STREAM_ACCEPT) * mq) >> 64
    return a < mp


def rejection_bonus(p_row: np.ndarray, seed: int, position: int) -> int | None:
    """A draw from the target masses in ascending id order; None when the row has no mass."""
    mp = _masses(p_row)
    if int(mp.sum()) == 0:
        return None
    return draw(mp, rand64(seed, position, STREAM_RESAMPLE))


def rejection_residual(p_row: np.ndarray, q_row: np.ndarray, seed: int, position: int) -> int | None:
    """The correction after a rejection: a draw from ``max(mp - mq, 0)``, else from ``p``."""
    mp, mq = _masses(p_row), _masses(q_row)
    residual = np.maximum(mp - mq, 0)
    if int(residual.sum()) == 0:
        return rejection_bonus(p_row, seed, position)
    return draw(residual, rand64(seed, position, STREAM_RESAMPLE))


def rejection_rules(
    target: np.ndarray, draft: np.ndarray, draft_tokens: np.ndarray, slots: SlotInputs, accept_all: bool
) -> dict:
    """REJECTION's ``accepts`` and ``correction`` (``verify_slots``' hooks) over the widened ``target`` and
    ``draft`` probabilities ``[T, V]``; a draft is judged by its own row, whatever the others are."""
    seeds = slots.seed

    def accepts(b: int, t: int, position: int, d: int) -> bool:
        return rejection_accepts(target[t], draft[t], d, int(seeds[b]), position)

    def correction(b: int, t: int, position: int, rejected: bool) -> int | None:
        if rejected:
            return rejection_residual(target[t], draft[t], int(seeds[b]), position)
        return rejection_bonus(target[t], int(seeds[b]), position)

    return {"accepts": accepts, "correction": correction}


verify_rejection = probability_strategy("rejection", rejection_rules)

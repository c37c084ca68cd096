"""Reference REJECTION verification (SPEC.md "verify_draft_tokens", **REJECTION**).

Drafts from a draft model come with the draft distribution ``q`` of each draft; the target
distribution is ``p``. Draft ``d`` at row ``t`` is accepted iff ``u * q(d) < p(d)``, written in
masses as ``a = (rand64(seed, pos, ACCEPT) * mq) >> 64; accept iff mq > 0 and a < mp``. At the
first rejection the token is drawn from the residual ``max(p - q, 0)`` (ascending ids, stream
RESAMPLE); after full acceptance the bonus is drawn from ``p`` (ascending ids, RESAMPLE). The
emitted tokens then follow ``p`` exactly (up to the 2^-40 mass quantum).

Choices where SPEC.md is silent (docs/ops/verify_draft_tokens.md restates them):
- a draft < 0 is never accepted (as in every strategy); a draft >= V has ``mq = 0`` and is
  rejected (``accept_all`` accepts any draft >= 0, as in every strategy);
- drafts that are skipped (prefill, ``reject_all``, ``reasoning_status == 1``) were never
  judged, so the token at position 0 is the *bonus* draw from ``p`` (not the residual);
- a target row without any valid entry (total mass 0) emits ``end_tokens[0]`` (the request
  ends cleanly, as a TOPP row without candidates does).
"""

from __future__ import annotations

import numpy as np

from fastspec.reference.mass import draw, prob_mass
from fastspec.reference.rng import STREAM_ACCEPT, STREAM_RESAMPLE, rand64
from fastspec.reference.sampling import as_f32_probs


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


def _wrap64(x: int) -> int:
    """x as a signed 64-bit integer (the kernels' arithmetic)."""
    return ((x + (1 << 63)) % (1 << 64)) - (1 << 63)


def _flat(x):
    return None if x is None else np.asarray(x).reshape(-1)


def verify_rejection(
    accept_tokens: np.ndarray,
    accept_num: np.ndarray,
    draft_tokens: np.ndarray,
    target_probs: np.ndarray,
    draft_probs: np.ndarray,
    seed: np.ndarray,
    step_idx: np.ndarray,
    stop_flags: np.ndarray,
    is_block_step: np.ndarray,
    seq_lens_encoder: np.ndarray,
    seq_lens_this_time: np.ndarray,
    cu_seqlens_q_output: np.ndarray,
    reasoning_status: np.ndarray | None,
    max_dec_len: np.ndarray,
    end_tokens: np.ndarray,
    *,
    accept_all: bool = False,
    reject_all: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """``verify_draft_tokens`` with strategy REJECTION; returns updated copies of
    ``(accept_tokens, accept_num)``. ``target_probs`` and ``draft_probs`` are ``[T, V]``
    (f32, f16, or bf16 as uint16 bits); row ``r(i)`` of both scores draft ``i``."""
    accept_tokens = np.array(accept_tokens, dtype=np.int64, copy=True)
    accept_num = np.array(accept_num, dtype=np.int32, copy=True)
    out, num = accept_tokens, accept_num.reshape(-1)
    seed, step_idx, stop_flags, is_block_step, enc, this_time, max_dec_len = (
        _flat(x) for x in (seed, step_idx, stop_flags, is_block_step, seq_lens_encoder, seq_lens_this_time, max_dec_len)
    )
    reasoning = _flat(reasoning_status)
    cu = np.asarray(cu_seqlens_q_output).reshape(-1)
    ends = [int(e) for e in np.asarray(end_tokens).reshape(-1)]
    target_probs = as_f32_probs(target_probs)  # f16, or bf16 given as uint16 bits: widened exactly
    draft_probs = as_f32_probs(draft_probs)
    rows = target_probs.shape[0]
    batch, cols = out.shape

    for b in range(batch):
        out[b, :] = -1
        num[b] = 0
        if stop_flags[b] or is_block_step[b]:
            continue
        prefill = enc[b] > 0
        if not prefill and not (enc[b] == 0 and this_time[b] >= 1):
            continue
        need = 1 if prefill else int(this_time[b])
        first, end = int(cu[b]), int(cu[b + 1])
        if first < 0 or end > rows or end - first < need:
            continue
        skip = prefill or reject_all or (reasoning is not None and reasoning[b] == 1)
        drafts = 0 if skip else min(need - 1, cols - 1)
        s, sd = int(step_idx[b]), int(seed[b])
        cur, emitted = s, []

        def emit(token: int) -> bool:
            nonlocal cur
            cur = _wrap64(cur + 1)
            is_end = token in ends
            if cur >= max_dec_len[b] and not is_end:
                token = ends[0]
            emitted.append(token)
            return is_end or cur >= max_dec_len[b]

        ended, rejected, i = False, False, 0
        while i < drafts:
            t, d = first + i, int(draft_tokens[b, i + 1])
            ok = d >= 0 and (accept_all or rejection_accepts(target_probs[t], draft_probs[t], d, sd, _wrap64(s + i)))
            if not ok:
                rejected = True
                break
            if emit(d):
                ended = True
                break
            i += 1
        if not ended:
            t = first + i
            position = _wrap64(s + i)
            if rejected:
                token = rejection_residual(target_probs[t], draft_probs[t], sd, position)
            else:
                token = rejection_bonus(target_probs[t], sd, position)
            emit(ends[0] if token is None else token)
        out[b, : len(emitted)] = emitted
        num[b] = len(emitted)
    return accept_tokens, accept_num

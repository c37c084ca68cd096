"""Reference ``verify_draft_tokens``: the rules of docs/ops/verify_draft_tokens.md, literally, one slot at a time."""

from __future__ import annotations

from typing import Callable

import numpy as np

from fastspec.reference.mass import draw, prob_mass
from fastspec.reference.rng import STREAM_TOPP, rand64

STRATEGIES = ("topp", "greedy", "target_match", "rejection", "block")


def _wrap64(x: int) -> int:
    """x as a signed 64-bit integer (two's complement wrap)."""
    return ((x + (1 << 63)) % (1 << 64)) - (1 << 63)


def _flat(x: np.ndarray | None) -> np.ndarray | None:
    return None if x is None else np.asarray(x).reshape(-1)


def verify_draft_tokens(
    accept_tokens: np.ndarray,
    accept_num: np.ndarray,
    draft_tokens: np.ndarray,
    target_tokens: np.ndarray | None,
    candidate_ids: np.ndarray | None,
    candidate_scores: np.ndarray | None,
    candidate_lens: np.ndarray | None,
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
    strategy: str,
    accept_all: bool = False,
    reject_all: bool = False,
    target_probs: np.ndarray | None = None,
    draft_probs: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Returns updated copies of ``(accept_tokens, accept_num)`` (inputs are not modified).

    Strategies "rejection" and "block" take ``target_probs`` and ``draft_probs`` ``[T, V]`` (see
    ``fastspec.reference.rejection`` and ``fastspec.reference.block``)."""
    strategy = strategy.lower()
    if strategy not in STRATEGIES:
        raise ValueError(f"verify_draft_tokens: unknown strategy {strategy!r}")
    if strategy in ("rejection", "block"):
        from fastspec.reference.block import verify_block
        from fastspec.reference.rejection import verify_rejection

        verify = verify_rejection if strategy == "rejection" else verify_block
        return verify(
            accept_tokens, accept_num, draft_tokens, target_probs, draft_probs, seed, step_idx, stop_flags,
            is_block_step, seq_lens_encoder, seq_lens_this_time, cu_seqlens_q_output, reasoning_status,
            max_dec_len, end_tokens, accept_all=accept_all, reject_all=reject_all,
        )
    targets, lens = _flat(target_tokens), _flat(candidate_lens)
    if strategy == "topp":
        rows, k_cand = np.asarray(candidate_ids).shape
    else:
        rows = len(targets)

    def candidate_len(t: int) -> int:
        return min(max(int(lens[t]), 0), k_cand)

    def accepts(b: int, t: int, position: int, d: int) -> bool:
        if strategy == "topp":
            return d in [int(c) for c in candidate_ids[t, : candidate_len(t)]]
        return d == int(targets[t])

    def correction(b: int, t: int, position: int, rejected: bool) -> int | None:
        if strategy != "topp":
            return int(targets[t])
        n = candidate_len(t)
        if n == 0:
            return None
        masses = prob_mass(np.asarray(candidate_scores[t, :n], dtype=np.float32))
        return int(candidate_ids[t, draw(masses, rand64(int(seed_flat[b]), position, STREAM_TOPP))])

    seed_flat = _flat(seed)
    return verify_slots(
        accept_tokens, accept_num, draft_tokens, seed, step_idx, stop_flags, is_block_step, seq_lens_encoder,
        seq_lens_this_time, cu_seqlens_q_output, reasoning_status, max_dec_len, end_tokens,
        rows=rows, accept_all=accept_all, reject_all=reject_all, accepts=accepts, correction=correction,
    )


def verify_slots(
    accept_tokens: np.ndarray,
    accept_num: np.ndarray,
    draft_tokens: np.ndarray,
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
    rows: int,
    accept_all: bool,
    reject_all: bool,
    accepts: Callable[[int, int, int, int], bool] | None,
    correction: Callable[[int, int, int, bool], int | None],
    decide: Callable[[int, int, int], int] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The slot walk every strategy shares (docs/ops/verify_draft_tokens.md, steps 1-3); returns updated copies.

    A strategy supplies ``accepts(b, row, position, draft)`` (drafts < 0 and ``accept_all``
    are handled here) and ``correction(b, row, position, rejected)``, the token at the first
    non-accepted position; ``None`` or a token < 0 emits ``end_tokens[0]``. A strategy that judges
    the drafts as one block supplies ``decide(b, first_row, drafts)`` instead of ``accepts``: how
    many of the slot's ``drafts`` it accepts (not called under ``accept_all`` or when no draft is judged).
    """
    accept_tokens = np.array(accept_tokens, dtype=np.int64, copy=True)
    accept_num = np.array(accept_num, dtype=np.int32, copy=True)
    out, num = accept_tokens, accept_num.reshape(-1)
    step_idx, stop_flags, is_block_step, enc, this_time, max_dec_len = (
        _flat(x) for x in (step_idx, stop_flags, is_block_step, seq_lens_encoder, seq_lens_this_time, max_dec_len)
    )
    reasoning = _flat(reasoning_status)
    cu = np.asarray(cu_seqlens_q_output).reshape(-1)
    ends = [int(e) for e in np.asarray(end_tokens).reshape(-1)]
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
        step = int(step_idx[b])
        cur, emitted = step, []

        def emit(token: int) -> bool:
            nonlocal cur
            cur = _wrap64(cur + 1)  # 64-bit arithmetic, like the kernels
            is_end = token in ends
            if cur >= max_dec_len[b] and not is_end:
                token = ends[0]
            emitted.append(token)
            return is_end or cur >= max_dec_len[b]

        ended, rejected, i = False, False, 0
        decided = decide(b, first, drafts) if decide is not None and drafts > 0 and not accept_all else None
        while i < drafts:
            d = int(draft_tokens[b, i + 1])
            judged = i < decided if decided is not None else accept_all or accepts(b, first + i, _wrap64(step + i), d)
            if not (d >= 0 and judged):
                rejected = True
                break
            if emit(d):
                ended = True
                break
            i += 1
        if not ended:
            token = correction(b, first + i, _wrap64(step + i), rejected)
            emit(ends[0] if token is None or token < 0 else token)
        out[b, : len(emitted)] = emitted
        num[b] = len(emitted)
    return accept_tokens, accept_num

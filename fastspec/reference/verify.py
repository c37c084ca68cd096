"""Reference ``verify_draft_tokens``: SPEC.md's rules, literally, one slot at a time."""

from __future__ import annotations

import numpy as np

from fastspec.reference.mass import draw, prob_mass
from fastspec.reference.rng import STREAM_TOPP, rand64

STRATEGIES = ("topp", "greedy", "target_match", "rejection")


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

    Strategy "rejection" takes ``target_probs`` and ``draft_probs`` ``[T, V]`` (see
    ``fastspec.reference.rejection``)."""
    strategy = strategy.lower()
    if strategy not in STRATEGIES:
        raise ValueError(f"verify_draft_tokens: unknown strategy {strategy!r}")
    if strategy == "rejection":
        from fastspec.reference.rejection import verify_rejection

        return verify_rejection(
            accept_tokens, accept_num, draft_tokens, target_probs, draft_probs, seed, step_idx, stop_flags,
            is_block_step, seq_lens_encoder, seq_lens_this_time, cu_seqlens_q_output, reasoning_status,
            max_dec_len, end_tokens, accept_all=accept_all, reject_all=reject_all,
        )
    accept_tokens = np.array(accept_tokens, dtype=np.int64, copy=True)
    accept_num = np.array(accept_num, dtype=np.int32, copy=True)
    out, num = accept_tokens, accept_num.reshape(-1)
    seed, step_idx, stop_flags, is_block_step, enc, this_time, max_dec_len = (
        _flat(x) for x in (seed, step_idx, stop_flags, is_block_step, seq_lens_encoder, seq_lens_this_time, max_dec_len)
    )
    targets, lens, reasoning = _flat(target_tokens), _flat(candidate_lens), _flat(reasoning_status)
    cu = np.asarray(cu_seqlens_q_output).reshape(-1)
    ends = [int(e) for e in np.asarray(end_tokens).reshape(-1)]
    batch, cols = out.shape
    if strategy == "topp":
        rows, k_cand = np.asarray(candidate_ids).shape
    else:
        rows = len(targets)

    def candidate_len(t: int) -> int:
        return min(max(int(lens[t]), 0), k_cand)

    def accepts(t: int, d: int) -> bool:
        if d < 0:  # a draft of -1 is never emitted
            return False
        if accept_all:
            return True
        if strategy == "topp":
            return d in [int(c) for c in candidate_ids[t, : candidate_len(t)]]
        return d == int(targets[t])

    def correction(b: int, t: int, position: int) -> int:
        if strategy == "topp":
            n = candidate_len(t)
            if n == 0:
                return ends[0]
            masses = prob_mass(np.asarray(candidate_scores[t, :n], dtype=np.float32))
            token = int(candidate_ids[t, draw(masses, rand64(int(seed[b]), position, STREAM_TOPP))])
        else:
            token = int(targets[t])
        return ends[0] if token < 0 else token

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

        cur, emitted = int(step_idx[b]), []

        def emit(token: int) -> bool:
            nonlocal cur
            cur = _wrap64(cur + 1)  # 64-bit arithmetic, like the kernels
            is_end = token in ends
            if cur >= max_dec_len[b] and not is_end:
                token = ends[0]
            emitted.append(token)
            return is_end or cur >= max_dec_len[b]

        ended, i = False, 0
        while i < drafts:
            d = int(draft_tokens[b, i + 1])
            if not accepts(first + i, d):
                break
            if emit(d):
                ended = True
                break
            i += 1
        if not ended:
            emit(correction(b, first + i, _wrap64(int(step_idx[b]) + i)))
        out[b, : len(emitted)] = emitted
        num[b] = len(emitted)
    return accept_tokens, accept_num

"""Reference ``update_model_status``: the rules of docs/ops/update_model_status.md, literally, one slot at a time."""

from __future__ import annotations

import numpy as np

from fastspec.reference.sequences import table_sequences


def _running(enc: int, dec: int, stopped: bool, blocked: bool) -> bool:
    return (enc > 0 or (enc == 0 and dec > 0)) and not stopped and not blocked


def _wrap32(x: int) -> int:
    return int(np.array(x & 0xFFFFFFFF, dtype=np.uint32).astype(np.int32))


def _ends_a_stop(output: np.ndarray, token: int, sequences: list[list[int]]) -> bool:
    """Whether ``output`` (the output so far) followed by ``token`` ends with one of the stop ``sequences``."""
    if not sequences:
        return False
    tail = [*(int(t) for t in output), token]
    return any(tail[-len(s) :] == s for s in sequences)


def update_model_status(
    seq_lens_encoder: np.ndarray,
    seq_lens_decoder: np.ndarray,
    seq_lens_this_time: np.ndarray,
    step_idx: np.ndarray,
    stop_flags: np.ndarray,
    accept_tokens: np.ndarray,
    accept_num: np.ndarray,
    draft_tokens: np.ndarray,
    token_ids_all: np.ndarray,
    prompt_lens: np.ndarray,
    is_block_step: np.ndarray,
    max_dec_len: np.ndarray,
    end_tokens: np.ndarray,
    stop_token_ids: np.ndarray | None = None,
    stop_sequences: np.ndarray | None = None,
    min_tokens: np.ndarray | None = None,
) -> tuple[np.ndarray, ...]:
    """Returns updated copies of the nine in-place tensors, then ``has_running`` (bool ``[1]``).
    ``stop_token_ids`` [B, S], ``stop_sequences`` [B, SS] and ``min_tokens`` [B]: left out, none and 0."""
    copies = [
        np.array(x, copy=True)
        for x in (
            seq_lens_encoder,
            seq_lens_decoder,
            seq_lens_this_time,
            step_idx,
            stop_flags,
            accept_tokens,
            accept_num,
            draft_tokens,
            token_ids_all,
        )
    ]
    enc, dec, this_time, steps, stops = (x.reshape(-1) for x in copies[:5])
    accepted, num, drafts, history = copies[5], copies[6].reshape(-1), copies[7], copies[8]
    prompt_lens, blocked, max_dec_len = (np.asarray(x).reshape(-1) for x in (prompt_lens, is_block_step, max_dec_len))
    ends = [int(e) for e in np.asarray(end_tokens).reshape(-1)]
    batch, max_len = history.shape
    cols = accepted.shape[1]
    min_tokens = np.zeros(batch, np.int64) if min_tokens is None else np.asarray(min_tokens).reshape(-1)

    has_running = False
    for b in range(batch):
        if blocked[b]:
            this_time[b] = 0
            num[b] = 0
            continue
        e0, d0 = int(enc[b]), int(dec[b])
        if not _running(e0, d0, bool(stops[b]), False):
            enc[b] = dec[b] = this_time[b] = num[b] = 0
            accepted[b, :] = -1
            continue

        p, step, max_dec = int(prompt_lens[b]), int(steps[b]), int(max_dec_len[b])
        stop_ids = [] if stop_token_ids is None else [int(t) for t in stop_token_ids[b] if t >= 0]
        sequences = [] if stop_sequences is None else table_sequences(stop_sequences[b])
        kept, ended = [], False
        for k in range(min(max(int(num[b]), 0), cols)):
            position = p + step
            if p < 0 or step < 0 or not 0 <= position < max_len:  # no room: dropped, the request ends
                ended = True
                break
            token = int(accepted[b, k])
            step += 1
            is_end = token in ends
            is_stop = token in stop_ids or (
                step >= int(min_tokens[b]) and _ends_a_stop(history[b, p:position], token, sequences)
            )
            if step >= max_dec and not is_end:
                token = ends[0]
            history[b, position] = token
            kept.append(token)
            if is_end or is_stop or step >= max_dec:
                ended = True
                break
        steps[b] = step
        num[b] = len(kept)
        accepted[b, :] = -1
        accepted[b, : len(kept)] = kept

        if e0 > 0:
            dec[b] = _wrap32(d0 + e0)
            if kept:
                enc[b] = 0
        else:
            dec[b] = _wrap32(d0 + len(kept))
        if kept:
            drafts[b, 0] = kept[-1]
        drafts[b, 1:] = -1
        if ended:
            stops[b] = True
        this_time[b] = 0 if ended else 1
        has_running |= _running(int(enc[b]), int(dec[b]), ended, False)
    return (*copies, np.array([has_running], dtype=np.bool_))

"""Reference ``pack_rows``: the rule of docs/ops/pack_rows.md, one slot at a time."""

from __future__ import annotations

import numpy as np

INT32_MAX = 2**31 - 1


def pack_rows(
    stop_flags: np.ndarray,
    is_block_step: np.ndarray,
    seq_lens_encoder: np.ndarray,
    seq_lens_decoder: np.ndarray,
    draft_tokens: np.ndarray,
    seq_lens_this_time: np.ndarray,
    cu_seqlens_q_output: np.ndarray,
    batch_id_per_token_output: np.ndarray,
    proposal_tokens: np.ndarray | None = None,
    proposal_lens: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Returns new ``(draft_tokens, seq_lens_this_time, cu_seqlens_q_output, batch_id_per_token_output,
    step_record)``: each slot's kind, a proposal's drafts, the packed rows and the record (rows, decode, drafts)."""
    stop, block = np.asarray(stop_flags).reshape(-1), np.asarray(is_block_step).reshape(-1)
    enc, dec = np.asarray(seq_lens_encoder).reshape(-1), np.asarray(seq_lens_decoder).reshape(-1)
    drafts = np.array(draft_tokens, dtype=np.int64, copy=True)
    fed = np.array(seq_lens_this_time, dtype=np.int32, copy=True)
    fed_flat = fed.reshape(-1)
    batch, k = drafts.shape[0], drafts.shape[1] - 1
    cu = np.zeros(batch + 1, np.int32)
    record = np.zeros((batch, k + 2), np.int64)
    for b in range(batch):
        running = not stop[b] and not block[b]
        prefill = running and enc[b] > 0
        decode = running and enc[b] == 0 and dec[b] > 0
        if proposal_lens is not None:
            n = min(max(int(np.asarray(proposal_lens).reshape(-1)[b]), 0), k) if decode else 0
            drafts[b, 1:] = -1
            drafts[b, 1 : 1 + n] = np.asarray(proposal_tokens)[b, :n]
            fed_flat[b] = n + 1 if decode else (fed_flat[b] if prefill else 0)
        rows = max(int(fed_flat[b]), 0) if decode else (1 if prefill else 0)
        cu[b + 1] = min(int(cu[b]) + rows, INT32_MAX)
        record[b, 0], record[b, 1], record[b, 2:] = rows, int(decode), drafts[b, 1:]
    cu_out = np.array(cu_seqlens_q_output, dtype=np.int32, copy=True)
    cu_out.reshape(-1)[:] = cu
    rows_total = np.asarray(batch_id_per_token_output).size
    slots = np.searchsorted(cu[1:], np.arange(rows_total), side="right")  # the count of cu[1..B] entries <= r
    ids = np.where(slots < batch, slots, -1).astype(np.int32).reshape(np.shape(batch_id_per_token_output))
    return drafts, fed, cu_out, ids, record

"""Reference ``step_status``: the rule of docs/ops/step_status.md, one slot at a time."""

from __future__ import annotations

import numpy as np


def step_status(
    step_record: np.ndarray,
    accept_num: np.ndarray,
    accept_tokens: np.ndarray,
    stop_flags: np.ndarray,
    is_block_step: np.ndarray,
    seq_lens_encoder: np.ndarray,
    seq_lens_decoder: np.ndarray,
) -> np.ndarray:
    """Returns ``status``, int64 ``[B, 2, K + 4]``: per slot its record, kept count, kept tokens, then stopped,
    blocked (1 or 0), encoder and decoder lengths."""
    record, kept = np.asarray(step_record, np.int64), np.asarray(accept_tokens, np.int64)
    batch, k = kept.shape[0], kept.shape[1] - 1
    per_slot = [np.asarray(x).reshape(-1) for x in (accept_num, stop_flags, is_block_step)]
    lengths = [np.asarray(x).reshape(-1) for x in (seq_lens_encoder, seq_lens_decoder)]
    status = np.zeros((batch, 2 * k + 8), np.int64)
    for b in range(batch):
        flags = [int(per_slot[1][b]), int(per_slot[2][b]), int(lengths[0][b]), int(lengths[1][b])]
        status[b] = [*record[b], int(per_slot[0][b]), *kept[b], *flags]
    return status.reshape(batch, 2, k + 4)

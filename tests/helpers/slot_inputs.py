"""The per-slot inputs of a verifying op (``verify_draft_tokens``, its REJECTION and BLOCK forms) for a batch
of decode slots that each read ``rows_per_slot`` consecutive target rows, so judge ``rows_per_slot - 1`` drafts."""

from __future__ import annotations

import numpy as np


def decode_slots(
    batch: int, rows_per_slot: int, *, seed: np.ndarray, step_idx: np.ndarray, end_token: int, max_dec_len: int = 10**9
) -> dict:
    """From ``seed`` to ``end_tokens`` in the ops' order: no slot stopped, blocked, prefilling or reasoning."""
    return {
        "seed": np.asarray(seed, np.int64),  # [B]
        "step_idx": np.asarray(step_idx, np.int64),  # [B]
        "stop_flags": np.zeros(batch, bool),
        "is_block_step": np.zeros(batch, bool),
        "seq_lens_encoder": np.zeros(batch, np.int32),
        "seq_lens_this_time": np.full(batch, rows_per_slot, np.int32),
        "cu_seqlens_q_output": (np.arange(batch + 1) * rows_per_slot).astype(np.int32),  # [B + 1]
        "reasoning_status": None,
        "max_dec_len": np.full(batch, max_dec_len, np.int64),
        "end_tokens": np.array([end_token], np.int64),
    }

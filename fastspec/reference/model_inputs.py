"""Reference ``model_inputs``: the rule of docs/ops/model_inputs.md, one slot and one row at a time."""

from __future__ import annotations

import numpy as np

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _sat(value: int) -> int:
    return min(max(value, INT64_MIN), INT64_MAX)


def model_inputs(
    token_ids_all: np.ndarray,
    prompt_lens: np.ndarray,
    step_idx: np.ndarray,
    seq_lens_encoder: np.ndarray,
    draft_tokens: np.ndarray,
    cu_seqlens_q_output: np.ndarray,
    batch_id_per_token_output: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Returns ``(tokens [B, L], lengths [B], row_pos [T])``, int64."""
    grid = np.asarray(token_ids_all, np.int64)
    prompt, step = np.asarray(prompt_lens).reshape(-1), np.asarray(step_idx).reshape(-1)
    enc = np.asarray(seq_lens_encoder).reshape(-1)
    drafts = np.asarray(draft_tokens, np.int64)
    cu = np.asarray(cu_seqlens_q_output).reshape(-1).astype(np.int64)
    ids = np.asarray(batch_id_per_token_output).reshape(-1)
    batch, cols = grid.shape
    k = drafts.shape[1] - 1
    tokens, lengths = grid.copy(), np.zeros(batch, np.int64)
    starts = [_sat(int(prompt[b]) + int(step[b])) for b in range(batch)]
    for b in range(batch):
        rows, start = int(cu[b + 1] - cu[b]), starts[b]
        if rows > 0:
            lengths[b] = start if enc[b] > 0 else _sat(start + rows - 1)
        if k > 0 and enc[b] <= 0:
            for c in range(max(start, 0), min(cols, _sat(start + rows - 1))):
                tokens[b, c] = drafts[b, 1 + min(c - start, k - 1)]
    row_pos = np.zeros(len(ids), np.int64)
    for r, b in enumerate(ids.tolist()):
        if 0 <= b < batch:
            row_pos[r] = _sat(_sat(starts[b] - 1) + r - int(cu[b]))
    return tokens, lengths, row_pos.reshape(np.shape(batch_id_per_token_output))

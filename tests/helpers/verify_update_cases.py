"""Random verify_draft_tokens / update_model_status batches (numpy only): shared by the CPU and GPU tests."""

from __future__ import annotations

import numpy as np

from tests.helpers.op_names import (  # noqa: F401 (the names these cases are read with)
    UPDATE_NAMES,
    UPDATE_OUTPUTS,
    VERIFY_NAMES,
    VERIFY_OPTIONAL,
    VERIFY_OUTPUTS,
)

STRATEGIES = ("topp", "greedy", "target_match")
SLOT_KINDS = ("decode", "decode", "decode", "prefill", "stopped", "blocked", "inactive", "short_rows")


def _end_tokens(rng: np.random.Generator, vocab: int) -> np.ndarray:
    count = int(rng.integers(1, 4))
    return rng.choice(vocab, size=count, replace=False).astype(np.int64)


def random_verify_case(
    rng: np.random.Generator,
    *,
    strategy: str | None = None,
    batch: int | None = None,
    k: int | None = None,
) -> tuple[dict, dict]:
    """A verify batch mixing every slot kind, with drafts planted to match 0..K positions.

    Returns ``(arrays, attrs)``: arrays by their documented names (None for absent optional tensors),
    attrs as keywords. Planted: end tokens inside the drafts, max_dec_len reached on a draft
    or on the bonus, negative targets, empty / invalid candidate rows, padding rows.
    """
    strategy = strategy or str(rng.choice(STRATEGIES))
    b = batch or int(rng.integers(1, 13))
    k = int(rng.choice([0, 1, 2, 5, 7])) if k is None else k
    cols = k + 1
    vocab = int(rng.choice([3, 8, 50, 1000], p=[0.1, 0.3, 0.3, 0.3]))
    k_cand = int(rng.integers(1, min(vocab, 12) + 1))
    end_tokens = _end_tokens(rng, vocab)

    enc = np.zeros(b, np.int32)
    this_time = np.zeros(b, np.int32)
    stop = np.zeros(b, np.bool_)
    block = np.zeros(b, np.bool_)
    step_idx = rng.integers(0, 60, size=b).astype(np.int64)
    draft_tokens = np.full((b, cols), -1, np.int64)
    draft_tokens[:, 0] = rng.integers(0, vocab, size=b)
    rows_of = np.zeros(b, np.int64)
    plant = np.zeros(b, np.int64)  # leading drafts planted to be accepted
    for i in range(b):
        kind = str(rng.choice(SLOT_KINDS))
        n = int(rng.integers(0, k + 1))  # drafts of a decode slot
        if kind in ("decode", "stopped", "blocked", "short_rows"):
            this_time[i] = 1 + n
            draft_tokens[i, 1 : 1 + n] = rng.integers(0, vocab, size=n)
            rows_of[i] = 1 + n
            plant[i] = n if rng.random() < 0.4 else int(rng.integers(0, n + 1))
        elif kind == "prefill":
            enc[i] = int(rng.integers(1, 40))
            this_time[i] = enc[i]
            rows_of[i] = 1
        else:  # inactive: no rows (sometimes a stray row, which is padding)
            rows_of[i] = int(rng.random() < 0.2)
        stop[i] = kind == "stopped" or rng.random() < 0.03
        block[i] = kind == "blocked" or rng.random() < 0.03
        if kind == "short_rows":
            rows_of[i] = int(rng.integers(0, 1 + n))
        if rng.random() < 0.05:  # an out-of-range this_time (more drafts than columns)
            this_time[i] = cols + int(rng.integers(1, 3))
            rows_of[i] = this_time[i]
    # Rows: each slot's rows in order, with padding rows in between sometimes.
    cu = np.zeros(b + 1, np.int32)
    row = 0
    for i in range(b):
        row += int(rng.random() < 0.15) * int(rng.integers(1, 3))
        cu[i] = row
        row += int(rows_of[i])
    cu[b] = row
    rows = row + int(rng.integers(0, 3))
    if b > 1 and rng.random() < 0.05:  # cu past T for the last slot
        cu[b] = rows + 1
    if rng.random() < 0.03:
        cu[0] = -1

    targets = rng.integers(0, vocab, size=rows).astype(np.int64)
    targets[rng.random(rows) < 0.05] = -1
    cand_ids = np.full((rows, k_cand), -1, np.int64)
    cand_scores = np.zeros((rows, k_cand), np.float32)
    cand_lens = np.zeros(rows, np.int32)
    for t in range(rows):
        n = int(rng.integers(0, k_cand + 1))
        cand_ids[t, :n] = rng.choice(vocab, size=n, replace=False)
        cand_scores[t, :n] = np.sort(rng.random(n).astype(np.float32))[::-1]
        roll = rng.random()
        if roll < 0.05 and n:
            cand_scores[t, rng.integers(0, n)] = np.float32(np.nan)
        elif roll < 0.1 and n:
            cand_scores[t, :n] = 0
        elif roll < 0.13 and n:
            cand_ids[t, rng.integers(0, n)] = -1
        cand_lens[t] = n
        if rng.random() < 0.05:
            cand_lens[t] = int(rng.choice([-3, k_cand + 5]))

    # Plant accepted drafts: the draft equals the row's target / one of its candidates.
    for i in range(b):
        for j in range(int(plant[i])):
            t = int(cu[i]) + j
            if not 0 <= t < rows or j + 1 >= cols:
                break
            if strategy == "topp":
                n = min(max(int(cand_lens[t]), 0), k_cand)
                if n == 0:
                    break
                draft = int(cand_ids[t, rng.integers(0, n)])
            else:
                draft = int(targets[t])
            if rng.random() < 0.08:
                draft = int(rng.choice(end_tokens))
                if strategy == "topp":
                    cand_ids[t, 0] = draft
                    cand_lens[t] = max(int(cand_lens[t]), 1)
                else:
                    targets[t] = draft
            draft_tokens[i, j + 1] = draft

    max_dec_len = step_idx + rng.integers(1, 3 * cols + 4, size=b)
    max_dec_len[rng.random(b) < 0.05] = 0
    arrays = {
        "accept_tokens": rng.integers(-1, vocab, size=(b, cols)).astype(np.int64),
        "accept_num": rng.integers(0, cols + 1, size=b).astype(np.int32),
        "draft_tokens": draft_tokens,
        "target_tokens": targets if strategy != "topp" else None,
        "candidate_ids": cand_ids if strategy == "topp" else None,
        "candidate_scores": cand_scores if strategy == "topp" else None,
        "candidate_lens": cand_lens if strategy == "topp" else None,
        "seed": rng.integers(-(2**63), 2**63 - 1, size=b, dtype=np.int64),
        "step_idx": step_idx,
        "stop_flags": stop,
        "is_block_step": block,
        "seq_lens_encoder": enc,
        "seq_lens_this_time": this_time,
        "cu_seqlens_q_output": cu,
        "reasoning_status": rng.integers(0, 3, size=b).astype(np.int32) if rng.random() < 0.4 else None,
        "max_dec_len": max_dec_len,
        "end_tokens": end_tokens,
    }
    attrs = {"strategy": strategy, "accept_all": bool(rng.random() < 0.1), "reject_all": bool(rng.random() < 0.1)}
    return arrays, attrs


def random_update_case(
    rng: np.random.Generator, *, batch: int | None = None, k: int | None = None, max_model_len: int | None = None
) -> dict:
    """An update batch mixing every slot kind: end tokens among the accepted tokens,
    max_dec_len reached inside them, L nearly full, out-of-range accept_num / prompt_lens."""
    b = batch or int(rng.integers(1, 13))
    k = int(rng.choice([0, 1, 2, 5, 7])) if k is None else k
    cols = k + 1
    L = max_model_len or int(rng.choice([1, 4, 16, 64]))
    vocab = int(rng.choice([3, 8, 50, 1000]))
    end_tokens = _end_tokens(rng, vocab)

    enc = np.zeros(b, np.int32)
    dec = np.zeros(b, np.int32)
    stop = np.zeros(b, np.bool_)
    block = np.zeros(b, np.bool_)
    prompt_lens = np.zeros(b, np.int64)
    step_idx = np.zeros(b, np.int64)
    accept_num = np.zeros(b, np.int32)
    accept_tokens = rng.integers(0, vocab, size=(b, cols)).astype(np.int64)
    for i in range(b):
        kind = str(rng.choice(SLOT_KINDS[:-1]))
        p = int(rng.integers(0, L + 1))
        s = int(rng.integers(0, L - p + 1))
        if rng.random() < 0.4:  # L nearly full
            s = max(0, L - p - int(rng.integers(0, cols + 1)))
        prompt_lens[i], step_idx[i] = p, s
        if kind == "prefill":
            enc[i] = int(rng.integers(1, 40))
            dec[i] = int(rng.integers(0, 5))
            accept_num[i] = int(rng.integers(0, 2))
        elif kind != "inactive" or rng.random() < 0.5:
            dec[i] = int(rng.integers(1, 200))
            accept_num[i] = int(rng.integers(0, cols + 1))
        stop[i] = kind == "stopped" or rng.random() < 0.03
        block[i] = kind == "blocked" or rng.random() < 0.03
        if rng.random() < 0.2 and accept_num[i]:  # an end token among the accepted tokens
            accept_tokens[i, rng.integers(0, accept_num[i])] = rng.choice(end_tokens)
        if rng.random() < 0.04:
            accept_num[i] = int(rng.choice([-2, cols + 3]))
        if rng.random() < 0.03:
            prompt_lens[i] = int(rng.choice([-1, L + 2]))
        if rng.random() < 0.03:
            step_idx[i] = -1
    max_dec_len = step_idx + rng.integers(0, cols + 3, size=b)
    this_time = rng.integers(0, cols + 1, size=b).astype(np.int32)
    return {
        "seq_lens_encoder": enc,
        "seq_lens_decoder": dec,
        "seq_lens_this_time": this_time,
        "step_idx": step_idx,
        "stop_flags": stop,
        "accept_tokens": accept_tokens,
        "accept_num": accept_num,
        "draft_tokens": rng.integers(-1, vocab, size=(b, cols)).astype(np.int64),
        "token_ids_all": rng.integers(0, vocab, size=(b, L)).astype(np.int64),
        "prompt_lens": prompt_lens,
        "is_block_step": block,
        "max_dec_len": max_dec_len,
        "end_tokens": end_tokens,
    }


def verify_case_from(strategy: str, **arrays) -> tuple[dict, dict]:
    """A verify case from keyword arrays (hand-written tests): absent optional tensors are None."""
    full = {name: arrays.get(name) for name in VERIFY_NAMES}
    return full, {"strategy": strategy}

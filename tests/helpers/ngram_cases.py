"""Random ngram_match batches (numpy only): shared by the CPU and the GPU tests."""

from __future__ import annotations

import numpy as np

from tests.helpers.op_names import NGRAM_NAMES

ARRAY_NAMES = NGRAM_NAMES


def random_case(
    rng: np.random.Generator, *, batch: int | None = None, max_model_len: int | None = None
) -> tuple[dict, dict]:
    """A batch mixing every slot kind, planted repeats, binding budgets and out-of-range values.

    Returns ``(arrays, attrs)``: arrays by their documented names, attrs as keywords.
    """
    b = batch or int(rng.integers(1, 9))
    L = max_model_len or int(rng.choice([1, 2, 8, 24, 64, 200], p=[0.05, 0.05, 0.2, 0.3, 0.2, 0.2]))
    k = int(rng.choice([0, 1, 3, 5, 6], p=[0.05, 0.2, 0.25, 0.3, 0.2]))
    vocab = int(rng.choice([2, 3, 5, 50]))
    tokens = rng.integers(0, vocab, size=(b, L), dtype=np.int64)
    prompt_lens = np.zeros(b, np.int64)
    step_idx = np.zeros(b, np.int64)
    for i in range(b):
        p = int(rng.integers(0, L + 1))
        s = int(rng.integers(0, L - p + 1)) if p == L or rng.random() < 0.2 else int(rng.integers(1, L - p + 1))
        prompt_lens[i], step_idx[i] = p, s
        if p >= 2 and s >= 1 and rng.random() < 0.7:  # plant the prompt's text as the newest tokens
            n = int(rng.integers(1, min(p, s) + 1))
            start = int(rng.integers(0, p - n + 1))
            tokens[i, p + s - n : p + s] = tokens[i, start : start + n]
        roll = rng.random()
        if roll < 0.05:  # invalid geometry: never reads out of bounds, never drafts
            prompt_lens[i] = int(rng.choice([-1, L + 1, p]))
            step_idx[i] = int(rng.choice([-3, L - p + 1, 2**40]))
    kinds = rng.choice(3, size=b, p=[0.2, 0.65, 0.15])  # prefill, decode, inactive
    encoder = np.where(kinds == 0, rng.integers(1, 50, b), 0).astype(np.int32)
    decoder = np.where(kinds == 1, rng.integers(1, 100, b), rng.integers(-1, 1, b) * (kinds == 2)).astype(np.int32)
    this_time = np.where(kinds == 0, encoder, rng.integers(0, 9, b)).astype(np.int32)
    arrays = {
        "token_ids_all": tokens,
        "prompt_lens": prompt_lens,
        "step_idx": step_idx,
        "draft_token_num": np.where(rng.random(b) < 0.7, k, rng.integers(-1, k + 3, b)).astype(np.int32),
        "draft_tokens": rng.integers(-5, 1000, size=(b, k + 1)).astype(np.int64),
        "seq_lens_this_time": this_time,
        "seq_lens_encoder": encoder,
        "seq_lens_decoder": decoder,
        "max_dec_len": np.where(rng.random(b) < 0.6, 10**6, step_idx + rng.integers(-2, k + 4, b)).astype(np.int64),
    }
    max_n = int(rng.integers(1, 6))
    attrs = {
        "max_ngram_size": max_n,
        "min_ngram_size": int(rng.integers(1, max_n + 1)),
        "token_budget": int(rng.choice([0, -1, rng.integers(1, b * (k + 1) + 2)])),
    }
    return arrays, attrs


def spec_example() -> tuple[dict, dict]:
    """docs/ops/ngram_match.md's worked example: prompt [10..60], generated [10, 20, 30, 40] -> drafts [50, 60]."""
    tokens = np.zeros((1, 16), np.int64)
    tokens[0, :10] = [10, 20, 30, 40, 50, 60, 10, 20, 30, 40]
    arrays = {
        "token_ids_all": tokens,
        "prompt_lens": np.array([6], np.int64),
        "step_idx": np.array([4], np.int64),
        "draft_token_num": np.array([3], np.int32),
        "draft_tokens": np.array([[40, 0, 0, 0]], np.int64),
        "seq_lens_this_time": np.array([1], np.int32),
        "seq_lens_encoder": np.array([0], np.int32),
        "seq_lens_decoder": np.array([10], np.int32),
        "max_dec_len": np.array([10], np.int64),
    }
    return arrays, {"max_ngram_size": 3, "min_ngram_size": 1, "token_budget": 0}


def random_anchors(rng: np.random.Generator, arrays: dict) -> np.ndarray:
    """Valid, stale, -1, past the known tokens, negative and extreme anchors."""
    known = np.clip(
        arrays["prompt_lens"].reshape(-1) + arrays["step_idx"].reshape(-1), 0, arrays["token_ids_all"].shape[1]
    )
    kinds = rng.integers(0, 6, known.shape[0])
    anchors = np.where(kinds == 0, -1, 0)
    anchors = np.where(kinds == 1, rng.integers(0, np.maximum(known, 1)), anchors)  # anywhere in the known tokens
    anchors = np.where(kinds == 2, np.maximum(known - rng.integers(1, 4, known.shape[0]), 0), anchors)  # near the end
    anchors = np.where(kinds == 3, known + rng.integers(0, 3, known.shape[0]), anchors)  # the future
    anchors = np.where(kinds == 4, -rng.integers(2, 100, known.shape[0]), anchors)
    anchors = np.where(kinds == 5, rng.choice([2**63 - 1, -(2**63), 2**31]), anchors)
    return anchors.astype(np.int64)


def repeat_slots(arrays: dict, count: int) -> dict:
    """The case with each of its slots ``count`` times over (copies)."""
    return {name: np.repeat(value, count, axis=0) for name, value in arrays.items()}


def slot_kinds(arrays: dict, fed: list[int]) -> dict:
    """A one-slot case as three slots of each kind: prefilling 7 prompt tokens, decoding after 5, and inactive;
    ``fed``: their seq_lens_this_time."""
    arrays = repeat_slots(arrays, 3)
    arrays["seq_lens_encoder"][:] = [7, 0, 0]
    arrays["seq_lens_decoder"][:] = [0, 5, 0]
    arrays["seq_lens_this_time"][:] = fed
    return arrays

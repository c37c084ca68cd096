"""Random ngram_append batches (numpy only): shared by the CPU and the GPU tests."""

from __future__ import annotations

import numpy as np

from tests.helpers.ngram_cases import ARRAY_NAMES, random_case

__all__ = ["ARRAY_NAMES", "random_append_case", "hybrid_example"]


def random_append_case(rng: np.random.Generator, **kwargs) -> tuple[dict, dict]:
    """ngram_match's random batches, with model drafts in draft_tokens[:, 1..m] that often
    continue the prompt's text (so the extended query matches) and m from 0 to past K."""
    arrays, attrs = random_case(rng, **kwargs)
    tokens, drafts = arrays["token_ids_all"], arrays["draft_tokens"]
    batch, cols = drafts.shape
    vocab = int(tokens.max(initial=0)) + 1
    for b in range(batch):
        if arrays["seq_lens_encoder"][b] > 0:
            continue
        m = int(rng.integers(0, cols + 2))
        arrays["seq_lens_this_time"][b] = m + 1 if rng.random() < 0.9 else int(rng.integers(-2, 1))
        roll = rng.random()
        if roll < 0.5 and tokens.shape[1] > 0:  # drafts copied from the row's own text
            start = int(rng.integers(0, tokens.shape[1]))
            piece = tokens[b, start : start + cols - 1]
            drafts[b, 1 : 1 + len(piece)] = piece
        elif roll < 0.8:
            drafts[b, 1:] = rng.integers(0, vocab, cols - 1)
    return arrays, attrs


def hybrid_example() -> tuple[dict, dict]:
    """Prompt [10..70], generated [10, 20]; the model drafted [30] -> n-gram appends [40, 50]."""
    tokens = np.zeros((1, 16), np.int64)
    tokens[0, :9] = [10, 20, 30, 40, 50, 60, 70, 10, 20]
    arrays = {
        "token_ids_all": tokens,
        "prompt_lens": np.array([7], np.int64),
        "step_idx": np.array([2], np.int64),
        "draft_token_num": np.array([3], np.int32),
        "draft_tokens": np.array([[20, 30, 0, 0, 0]], np.int64),
        "seq_lens_this_time": np.array([2], np.int32),  # one model draft
        "seq_lens_encoder": np.array([0], np.int32),
        "seq_lens_decoder": np.array([9], np.int32),
        "max_dec_len": np.array([100], np.int64),
    }
    return arrays, {"max_ngram_size": 3, "min_ngram_size": 1, "token_budget": 0}

"""ngram_match workloads: a no-match worst case and real text (source files as word ids)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np

GENERATED = 256  # generated tokens per request
NGRAM_ATTRS = {"max_ngram_size": 5, "min_ngram_size": 1, "token_budget": 0}  # the n-gram benches' attributes
WORD = re.compile(r"\w+|[^\w\s]")


def word_ids(min_tokens: int) -> np.ndarray:
    """Python sources (this repository, then the standard library) tokenised into word ids."""
    roots = [Path(__file__).resolve().parent.parent, Path(sys.base_prefix) / "lib"]
    vocab: dict[str, int] = {}
    ids: list[int] = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            try:
                text = path.read_text(errors="ignore")
            except OSError:
                continue
            ids.extend(vocab.setdefault(word, len(vocab)) for word in WORD.findall(text))
            if len(ids) >= min_tokens:
                return np.asarray(ids, dtype=np.int64)
    reps = -(-min_tokens // max(len(ids), 1))
    return np.tile(np.asarray(ids, dtype=np.int64), reps)


def ngram_inputs(kind: str, batch: int, max_model_len: int, k: int = 5, seed: int = 0) -> dict[str, np.ndarray]:
    """Decode slots with full buffers: prompt of L - GENERATED tokens, then GENERATED generated ones."""
    rng = np.random.default_rng(seed)
    if kind == "nomatch":
        # random ids, and a newest token that occurs nowhere else: every position is scanned
        tokens = rng.integers(0, 50_000, size=(batch, max_model_len), dtype=np.int64)
        tokens[:, -1] = 50_000
    elif kind == "text":
        stream = word_ids(max_model_len * 4)
        starts = rng.integers(0, len(stream) - max_model_len, size=batch)
        tokens = np.stack([stream[s : s + max_model_len] for s in starts])
    else:
        raise ValueError(f"unknown workload {kind!r}")
    generated = min(GENERATED, max_model_len // 2)
    return {
        "token_ids_all": np.ascontiguousarray(tokens),
        "prompt_lens": np.full(batch, max_model_len - generated, np.int64),
        "step_idx": np.full(batch, generated, np.int64),
        "draft_token_num": np.full(batch, k, np.int32),
        "draft_tokens": np.zeros((batch, k + 1), np.int64),
        "seq_lens_this_time": np.ones(batch, np.int32),
        "seq_lens_encoder": np.zeros(batch, np.int32),
        "seq_lens_decoder": np.full(batch, max_model_len, np.int32),
        "max_dec_len": np.full(batch, 1 << 30, np.int64),
    }

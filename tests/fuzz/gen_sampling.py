"""Well-formed random calls of top_p_candidates, sample_tokens and top_k_top_p_probs.

Rows of every kind the tests know (peaked, flat, ties, zeros, NaN / inf / negative
entries, masses that floor to 0, values above 1, subnormals, no valid entry) in float32,
float16 and bfloat16; vocabularies from 1 to past the kernels' chunk and sort limits;
requests with several rows, padding rows anywhere, shuffled rows, min_p left out or per
request (0, 1, below its quantum, ordinary cuts, exactly a row's entry over its largest), and
the outputs sometimes given by the caller (filled with garbage the op must overwrite).
"""

from __future__ import annotations

import numpy as np

from fastspec.core.schema import MAX_CANDIDATE_LEN
from fastspec.reference import STREAM_DRAFT, STREAM_TARGET
from tests.helpers.sampling_cases import KINDS, make_batch, make_probs, min_p_values, request_params, to_bf16_bits


def _vocab(rng: np.random.Generator) -> int:
    roll = rng.random()
    if roll < 0.6:
        return int(rng.choice([1, 2, 3, 7, 50, 255]))
    if roll < 0.96:
        return int(rng.choice([300, 1024, 1025, 4097, 5000, 8193]))
    return int(rng.choice([20000, 70000]))


def _probs(rng: np.random.Generator, vocab: int, rows: int) -> np.ndarray:
    kinds = tuple(rng.permutation(KINDS))
    kinds = kinds[: int(rng.integers(1, len(kinds) + 1))]
    probs = make_probs(rng, vocab, rows, kinds=kinds) if rows else np.zeros((0, vocab), np.float32)
    roll = rng.random()
    if roll < 0.2:
        return probs.astype(np.float16)
    if roll < 0.4:
        return to_bf16_bits(probs)
    return probs


def _rows(rng: np.random.Generator, vocab: int) -> tuple[np.ndarray, np.ndarray, int]:
    """cu_seqlens_q_output, batch_id_per_token_output (padding rows anywhere) and B."""
    batch = int(rng.integers(1, 7))
    per_request = rng.integers(0, 4 if vocab < 10000 else 2, batch).tolist()
    cu, batch_id = make_batch(rng, per_request, padding_rows=int(rng.integers(0, 3)))
    if rng.random() < 0.2:
        batch_id = rng.permutation(batch_id).astype(np.int32)
    return cu, batch_id, batch


def _requests(rng: np.random.Generator) -> tuple[int, np.ndarray, np.ndarray, int, tuple[np.ndarray, ...]]:
    """A vocabulary, a batch's rows (``_rows``) and its requests' top_p, top_k, seed and step_idx."""
    vocab = _vocab(rng)
    cu, batch_id, batch = _rows(rng, vocab)
    return vocab, cu, batch_id, batch, request_params(rng, batch, vocab)


def _min_p(rng: np.random.Generator, probs: np.ndarray, batch_id: np.ndarray, batch: int) -> np.ndarray | None:
    """Left out, or each request's min_p: the edge values, uniform ones, or a ratio that puts the cut
    exactly at one of the request's entries (read as float32 of any dtype)."""
    roll = rng.random()
    if roll < 0.3:
        return None
    values = min_p_values(rng, batch, odd=False)
    if roll < 0.5:
        return values
    values = np.where(rng.random(batch) < 0.5, rng.random(batch), values).astype(np.float32)
    rows = probs.astype(np.float32) if probs.dtype != np.uint16 else (probs.astype(np.uint32) << 16).view(np.float32)
    for b in range(batch):
        mine = np.flatnonzero(batch_id == b)
        if len(mine) == 0:
            continue
        row = rows[mine[0]]
        valid = row[np.isfinite(row) & (row > 0)]
        if len(valid) and rng.random() < 0.5:
            values[b] = np.float32(min(float(rng.choice(valid)) / float(valid.max()), 1.0))
    return values


def _garbage(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    if dtype == "float32":
        return rng.choice(np.array([np.nan, -1.0, 7.5], np.float32), shape)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    return rng.integers(-(2**31), 2**31, shape).astype(dtype)


def candidates_call(rng: np.random.Generator) -> tuple[dict, dict]:
    vocab, _, batch_id, batch, (top_p, _, _, _) = _requests(rng)
    rows = len(batch_id)
    top_k_max = min(vocab, MAX_CANDIDATE_LEN)
    k = int(rng.choice([1, min(5, top_k_max), top_k_max, int(rng.integers(1, top_k_max + 1))]))
    probs = _probs(rng, vocab, rows)
    arrays = {
        "probs": probs,
        "top_p": top_p,
        "batch_id_per_token_output": batch_id,
        "min_p": _min_p(rng, probs, batch_id, batch),
        "candidate_ids": None,
        "candidate_scores": None,
        "candidate_lens": None,
    }
    if rng.random() < 0.3:
        arrays["candidate_ids"] = _garbage(rng, (rows, k), "int64")
        arrays["candidate_scores"] = _garbage(rng, (rows, k), "float32")
        arrays["candidate_lens"] = _garbage(rng, (rows,), "int32")
    return arrays, {"max_candidate_len": k}


def _top_k(rng: np.random.Generator, top_k: np.ndarray, vocab: int) -> np.ndarray:
    """Sometimes top_k values past the kernels' count-target limit instead."""
    if rng.random() < 0.2:
        return rng.choice(np.array([8192, 8193, vocab - 1, vocab], np.int64), len(top_k)).astype(np.int32)
    return top_k


def sample_call(rng: np.random.Generator) -> tuple[dict, dict]:
    vocab, cu, batch_id, batch, (top_p, top_k, seed, step_idx) = _requests(rng)
    rows = len(batch_id)
    top_k = _top_k(rng, top_k, vocab)
    probs = _probs(rng, vocab, rows)
    arrays = {
        "probs": probs,
        "top_p": top_p,
        "top_k": top_k,
        "seed": seed,
        "step_idx": step_idx,
        "batch_id_per_token_output": batch_id,
        "cu_seqlens_q_output": cu,
        "min_p": _min_p(rng, probs, batch_id, batch),
        "tokens": _garbage(rng, (rows,), "int64") if rng.random() < 0.3 else None,
    }
    return arrays, {"rand_stream": int(rng.choice([STREAM_TARGET, STREAM_DRAFT]))}


def probs_call(rng: np.random.Generator) -> tuple[dict, dict]:
    vocab, _, batch_id, batch, (top_p, top_k, _, _) = _requests(rng)
    rows = len(batch_id)
    probs = _probs(rng, vocab, rows)
    arrays = {
        "probs": probs,
        "top_p": top_p,
        "top_k": _top_k(rng, top_k, vocab),
        "batch_id_per_token_output": batch_id,
        "min_p": _min_p(rng, probs, batch_id, batch),
        "target_probs": _garbage(rng, (rows, vocab), "float32") if rng.random() < 0.3 else None,
    }
    return arrays, {}

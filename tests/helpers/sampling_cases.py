"""Test inputs for top_p_candidates / sample_tokens / top_k_top_p_probs, shared by the CPU, XPU and GPU
tests (numpy only)."""

from __future__ import annotations

import numpy as np

KINDS = ("peaked", "uniform", "ties", "zeros", "special", "tiny", "large", "subnormal", "invalid")
TOP_PS = (1e-6, 0.5, 0.95, 1.0)
TOP_P_ODD = (float("nan"), 1.5, -0.5, 0.0)
# min_p: off (0), the largest alone (1), below or at half its quantum (1e-9, 2^-25: no cut), rounding up to
# one quantum (1.5 2^-25) or one (2^-24), ordinary cuts
MIN_PS = (0.0, 1.0, 1e-9, 2.0**-25, 1.5 * 2.0**-25, 2.0**-24, 0.01, 0.1, 0.5, 0.9)
MIN_P_ODD = (float("nan"), -0.5, 1.5, float("inf"), float("-inf"))  # read as 0, 0, 1, 1, 0


def softmax(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)


def make_row(rng: np.random.Generator, kind: str, vocab: int) -> np.ndarray:
    """One probability row of the given kind (float32)."""
    if kind == "peaked":
        return softmax(rng.normal(0.0, 5.0, vocab))
    if kind == "uniform":  # near-uniform: tiny relative noise, plenty of exact ties at large V
        return softmax(rng.normal(0.0, 1e-3, vocab))
    if kind == "ties":  # few distinct values: exact ties everywhere
        levels = rng.integers(1, 4, vocab).astype(np.float32)
        return (levels / levels.sum()).astype(np.float32)
    if kind == "zeros":
        p = softmax(rng.normal(0.0, 2.0, vocab))
        p[rng.random(vocab) < 0.5] = 0.0
        return p
    if kind == "special":  # NaN, inf, negative and zero entries among valid ones
        p = softmax(rng.normal(0.0, 3.0, vocab))
        r = rng.random(vocab)
        p[r < 0.1] = np.nan
        p[(r >= 0.1) & (r < 0.15)] = np.inf
        p[(r >= 0.15) & (r < 0.2)] = -np.inf
        p[(r >= 0.2) & (r < 0.3)] = -p[(r >= 0.2) & (r < 0.3)]
        p[(r >= 0.3) & (r < 0.35)] = 0.0
        return p
    if kind == "tiny":  # masses floor to 0 (p < 2^-40): the M == 0 rules
        return (rng.random(vocab) * 2.0**-42 + 2.0**-60).astype(np.float32)
    if kind == "large":  # values above 1 are valid (mass clamps to 2^40), order by value
        p = softmax(rng.normal(0.0, 2.0, vocab))
        p[rng.random(vocab) < 0.05] = rng.choice(np.array([1.0, 2.0, 3.5], np.float32))
        return p
    if kind == "subnormal":
        p = softmax(rng.normal(0.0, 2.0, vocab))
        p[rng.random(vocab) < 0.3] = np.float32(1e-40)
        return p
    if kind == "invalid":  # no valid entry at all
        return rng.choice(np.array([np.nan, 0.0, -1.0, np.inf, -0.0], np.float32), vocab)
    raise ValueError(kind)


def make_probs(rng: np.random.Generator, vocab: int, rows: int, kinds=KINDS) -> np.ndarray:
    return np.stack([make_row(rng, kinds[i % len(kinds)], vocab) for i in range(rows)]).astype(np.float32)


def to_bf16_bits(p: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bit patterns (uint16), round to nearest even; NaN stays NaN."""
    u = np.ascontiguousarray(p, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(p)
    rounded[nan] = 0x7FC0
    return rounded


def make_batch(rng: np.random.Generator, rows_per_request: list[int], padding_rows: int = 0):
    """cu_seqlens_q_output [B+1] and batch_id_per_token_output [T] (padding rows at the end: -1 or B)."""
    b = len(rows_per_request)
    cu = np.zeros(b + 1, dtype=np.int32)
    cu[1:] = np.cumsum(rows_per_request)
    batch_id = np.repeat(np.arange(b, dtype=np.int32), rows_per_request)
    pad = rng.choice(np.array([-1, b, 1 << 30], np.int32), padding_rows)
    return cu, np.concatenate([batch_id, pad]).astype(np.int32)


def request_params(rng: np.random.Generator, batch: int, vocab: int):
    """top_p f32, top_k i32, seed i64, step_idx i64 for `batch` requests, covering the edge values."""
    top_p = rng.choice(np.array(TOP_PS + TOP_P_ODD, np.float32), batch).astype(np.float32)
    top_k = rng.choice(np.array([0, 1, 2, 5, 64, vocab, vocab + 3, -1], np.int64), batch).astype(np.int32)
    seed = rng.integers(-(2**63), 2**63 - 1, batch, dtype=np.int64)
    step_idx = rng.integers(0, 2**40, batch, dtype=np.int64)
    return top_p, top_k, seed, step_idx


def min_p_values(rng: np.random.Generator, batch: int, odd: bool = True) -> np.ndarray:
    """min_p float32 for ``batch`` requests, the edge values included (``odd``: NaN, negative, > 1, inf too)."""
    return rng.choice(np.array(MIN_PS + (MIN_P_ODD if odd else ()), np.float32), batch).astype(np.float32)


def sample_case(
    rng: np.random.Generator, vocab: int, rows_per_request=(1, 3, 2, 1, 4, 1, 2, 5), padding_rows: int = 3
) -> tuple[np.ndarray, ...]:
    """sample_tokens' inputs ``(probs, top_p, top_k, seed, step_idx, batch_id, cu)``: probs [T, V] of every
    row kind, each request's parameters (edge values included), padding rows at the end of the batch."""
    cu, batch_id = make_batch(rng, list(rows_per_request), padding_rows=padding_rows)
    probs = make_probs(rng, vocab, len(batch_id))
    top_p, top_k, seed, step_idx = request_params(rng, len(rows_per_request), vocab)
    return probs, top_p, top_k, seed, step_idx, batch_id, cu


def probs_case(
    rng: np.random.Generator, vocab: int, rows_per_request=(1, 3, 2, 1, 4, 1, 2, 5), padding_rows: int = 3
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A top_k_top_p_probs call: probs [T, V] of every row kind, top_p f32 and top_k i32 of each request
    (edge values included), batch_id_per_token_output i32 [T] (padding rows at the end)."""
    probs, top_p, top_k, _, _, batch_id, _ = sample_case(rng, vocab, rows_per_request, padding_rows)
    return probs, top_p, top_k, batch_id


LARGE_VOCAB = 151936  # Qwen's vocabulary: every worker strides over hundreds of entries per pass
LARGE_VOCAB_KINDS = ("peaked", "uniform", "ties", "special", "zeros")


def large_vocab_case(rng: np.random.Generator, rows_per_request=(2, 1, 2), kinds=LARGE_VOCAB_KINDS):
    """sample_tokens' inputs ``(probs, top_p, top_k, seed, step_idx, batch_id, cu)`` for up to three
    requests with rows of LARGE_VOCAB entries, one padding row; top_p and top_k vary per request."""
    requests = len(rows_per_request)
    cu, batch_id = make_batch(rng, list(rows_per_request), padding_rows=1)
    probs = make_probs(rng, LARGE_VOCAB, len(batch_id), kinds=kinds)
    top_p = np.array([0.9, 0.5, 1.0][:requests], np.float32)
    top_k = np.array([0, 50, 1000][:requests], np.int32)
    seed = np.arange(1, requests + 1, dtype=np.int64)
    step_idx = np.array([10, 0, 99][:requests], np.int64)
    return probs, top_p, top_k, seed, step_idx, batch_id, cu

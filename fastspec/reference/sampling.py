"""Reference ``top_p_candidates``, ``sample_tokens`` and ``top_k_top_p_probs``: the rules of docs/ops/sampling.md,
literally, one row at a time.

Probabilities may be float32, float16 or bfloat16. numpy has no bfloat16, so a
``uint16`` array is read as bfloat16 bit patterns (what Paddle's ``.numpy()``
returns for a bfloat16 tensor); an ``ml_dtypes.bfloat16`` array works too.
Every dtype is widened to float32 exactly before anything else happens.
"""

from __future__ import annotations

import numpy as np

from fastspec.core.streams import STREAM_DRAFT, STREAM_TARGET
from fastspec.reference.mass import draw, minp_threshold, prob_mass, prob_valid, topp_prefix_len, topp_threshold
from fastspec.reference.rng import rand64

MAX_CANDIDATE_LEN = 1024
# The random streams sample_tokens may draw with: the target's samples, or a draft model's.
SAMPLE_STREAMS = (STREAM_TARGET, STREAM_DRAFT)


def bf16_bits_to_f32(bits: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns (uint16) to float32, exactly (the 16 bits become the high half)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def as_f32_probs(probs: np.ndarray) -> np.ndarray:
    """Widen float32 / float16 / bfloat16 (uint16 bits or ml_dtypes) probabilities to float32."""
    p = np.asarray(probs)
    if p.dtype == np.uint16:
        return bf16_bits_to_f32(p)
    if p.dtype == np.float32:
        return p
    if p.dtype == np.float16 or p.dtype.name == "bfloat16":
        return p.astype(np.float32)
    raise TypeError(f"probs must be float32, float16 or bfloat16 (uint16 bits), got {p.dtype}")


def _order(row: np.ndarray) -> np.ndarray:
    """Valid token ids by f32 value descending, ties by id ascending."""
    ids = np.flatnonzero(prob_valid(row))
    # -value as float64 is exact; lexsort: last key is primary.
    return ids[np.lexsort((ids, -row[ids].astype(np.float64)))]


def _flat(x: np.ndarray) -> np.ndarray:
    return np.asarray(x).reshape(-1)


def _min_p(min_p: np.ndarray | None, batch: int) -> np.ndarray:
    """Each request's min_p as float32; left out: 0 (no cut)."""
    return np.zeros(batch, np.float32) if min_p is None else _flat(min_p).astype(np.float32)


def min_p_kept(row: np.ndarray, min_p: float) -> np.ndarray:
    """The float32 row with the entries min_p drops set to 0 (invalid): a valid entry stays iff its mass is
    at least ``minp_threshold`` of the row's largest mass (every one when that threshold is 0)."""
    masses = prob_mass(row)
    thr = minp_threshold(int(masses.max()) if len(masses) else 0, min_p)
    return row if thr == 0 else np.where(masses >= thr, row, np.float32(0))


def top_p_candidates(
    probs: np.ndarray,
    top_p: np.ndarray,
    batch_id_per_token_output: np.ndarray,
    min_p: np.ndarray | None = None,
    *,
    max_candidate_len: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Returns ``(candidate_ids int64 [T, K'], candidate_scores float32 [T, K'], candidate_lens int32 [T])``.

    Row t of request b = batch_id_per_token_output[t], its entries below ``min_p[b]``'s cut made
    invalid (:func:`min_p_kept`): the candidates are the first K' valid tokens in probability
    order; ``len`` is the length of the top-p prefix of the candidates, with the threshold taken
    from the mass of all valid entries of the row (or the number of candidates when no prefix
    reaches it). Slots >= len hold id -1, score 0. Padding rows (b outside [0, B)) and rows
    without a valid entry: len 0.
    """
    p = as_f32_probs(probs)
    if p.ndim != 2:
        raise ValueError(f"probs must have rank 2, got shape {p.shape}")
    rows, vocab = p.shape
    k = int(max_candidate_len)
    if not 1 <= k <= min(vocab, MAX_CANDIDATE_LEN):
        raise ValueError(f"max_candidate_len must be in [1, min(V, {MAX_CANDIDATE_LEN})], got {k}")
    top_p = _flat(top_p).astype(np.float32)
    batch_ids = _flat(batch_id_per_token_output).astype(np.int64)
    batch = len(top_p)
    min_p = _min_p(min_p, batch)

    ids = np.full((rows, k), -1, dtype=np.int64)
    scores = np.zeros((rows, k), dtype=np.float32)
    lens = np.zeros(rows, dtype=np.int32)
    for t in range(rows):
        b = int(batch_ids[t])
        if not 0 <= b < batch:
            continue
        row = min_p_kept(p[t], float(min_p[b]))
        order = _order(row)
        if len(order) == 0:
            continue
        cand = order[:k]
        total = int(prob_mass(row).sum())
        n = topp_prefix_len(prob_mass(row[cand]), total, float(top_p[b]))
        if n == 0:
            n = len(cand)
        ids[t, :n] = cand[:n]
        scores[t, :n] = row[cand[:n]]
        lens[t] = n
    return ids, scores, lens


def sample_set(row: np.ndarray, top_p: float, top_k: int, min_p: float = 0.0) -> np.ndarray:
    """The set ``S`` sample_tokens draws a float32 row from, ids in probability order (empty without a
    valid entry): the top-p prefix of ``S_k``, the first ``top_k`` valid tokens min_p keeps (all of them
    for ``top_k <= 0`` or ``>= V``), with the threshold from the mass of ``S_k``."""
    order = _order(min_p_kept(row, min_p))
    if len(order) == 0:
        return order
    s_k = order if top_k <= 0 or top_k >= len(row) else order[:top_k]
    masses = prob_mass(row[s_k])
    n = topp_prefix_len(masses, int(masses.sum()), top_p)  # >= 1: the threshold never exceeds the total
    return s_k[:n]


def sample_row(row: np.ndarray, top_p: float, top_k: int, random: int, min_p: float = 0.0) -> int:
    """One row of ``sample_tokens`` with its rand64 value already drawn; -1 without a valid entry."""
    s = np.sort(sample_set(row, top_p, top_k, min_p))  # S re-ordered by ascending token id
    if len(s) == 0:
        return -1
    return int(s[draw(prob_mass(row[s]), random)])


def check_sample_stream(stream: object, name: str = "stream") -> int:
    """``stream`` as an int if it is STREAM_TARGET or STREAM_DRAFT; ValueError naming ``name`` otherwise."""
    ok = not isinstance(stream, bool) and isinstance(stream, (int, np.integer)) and int(stream) in SAMPLE_STREAMS
    if not ok:
        raise ValueError(
            f"sample_tokens: '{name}' must be STREAM_TARGET ({STREAM_TARGET}) or STREAM_DRAFT ({STREAM_DRAFT}), "
            f"got {stream!r}"
        )
    return int(stream)


def sample_tokens(
    probs: np.ndarray,
    top_p: np.ndarray,
    top_k: np.ndarray,
    seed: np.ndarray,
    step_idx: np.ndarray,
    batch_id_per_token_output: np.ndarray,
    cu_seqlens_q_output: np.ndarray,
    min_p: np.ndarray | None = None,
    *,
    stream: int = STREAM_TARGET,
) -> np.ndarray:
    """Returns ``tokens`` int64 [T]: one seeded draw per row from the min-p ∩ top-k ∩ top-p distribution.

    Row t of request b, offset ``j = t - cu_seqlens_q_output[b]``: ``S_k`` = the first
    ``top_k[b]`` valid tokens in probability order that ``min_p[b]`` keeps (all of them for
    ``top_k <= 0`` or ``>= V``); ``S`` = the top-p prefix of ``S_k`` (threshold from the mass of ``S_k``);
    the token is drawn from ``S`` in ascending id order with
    ``rand64(seed[b], step_idx[b] + j, stream)``. Padding rows and rows without a valid
    entry give -1. ``stream`` is STREAM_TARGET (the target's samples, the default) or
    STREAM_DRAFT (a draft model's samples: same seed, independent draws); anything else
    raises ValueError.
    """
    stream = check_sample_stream(stream)
    p = as_f32_probs(probs)
    if p.ndim != 2:
        raise ValueError(f"probs must have rank 2, got shape {p.shape}")
    rows = p.shape[0]
    top_p = _flat(top_p).astype(np.float32)
    top_k = _flat(top_k).astype(np.int64)
    seed = _flat(seed).astype(np.int64)
    step_idx = _flat(step_idx).astype(np.int64)
    batch_ids = _flat(batch_id_per_token_output).astype(np.int64)
    cu = _flat(cu_seqlens_q_output).astype(np.int64)
    batch = len(top_p)
    min_p = _min_p(min_p, batch)

    tokens = np.full(rows, -1, dtype=np.int64)
    for t in range(rows):
        b = int(batch_ids[t])
        if not 0 <= b < batch:
            continue
        # position arithmetic wraps like the kernels' 64-bit integers
        position = (int(step_idx[b]) + t - int(cu[b])) & ((1 << 64) - 1)
        random = rand64(int(seed[b]), position, stream)
        tokens[t] = sample_row(p[t], float(top_p[b]), int(top_k[b]), random, float(min_p[b]))
    return tokens


def sampling_distribution(row: np.ndarray, top_p: float, top_k: int, min_p: float = 0.0) -> np.ndarray:
    """The exact distribution ``sample_tokens`` draws a row from (float64 [V], for statistical tests)."""
    row = as_f32_probs(np.asarray(row)[None])[0]
    out = np.zeros(len(row), dtype=np.float64)
    sel = sample_set(row, top_p, top_k, min_p)
    if len(sel) == 0:
        return out
    m = prob_mass(row[sel]).astype(np.float64)
    if m.sum() == 0:
        out[np.min(sel)] = 1.0
    else:
        out[sel] = m / m.sum()
    return out


def renormalised(masses: np.ndarray) -> np.ndarray:
    """float32 ``float(double(m) / double(M))`` of every mass ``m`` of a set of total mass ``M``, summed
    exactly as integers; each step rounds to nearest (int -> float64, the division, float64 -> float32).
    A set of mass 0 is a single token: 1."""
    total = int(np.asarray(masses, dtype=np.int64).sum(dtype=object))
    if total == 0:
        return np.ones(len(masses), dtype=np.float32)
    return (np.asarray(masses, dtype=np.int64).astype(np.float64) / float(total)).astype(np.float32)


def top_k_top_p_probs(
    probs: np.ndarray,
    top_p: np.ndarray,
    top_k: np.ndarray,
    batch_id_per_token_output: np.ndarray,
    min_p: np.ndarray | None = None,
) -> np.ndarray:
    """Returns ``target_probs`` float32 [T, V]: each row's distribution exactly as ``sample_tokens`` samples it.

    Row t of request b = batch_id_per_token_output[t]: the members of ``S`` (:func:`sample_set` with
    ``top_p[b]``, ``top_k[b]``, ``min_p[b]``) get :func:`renormalised` of their masses, every other entry 0. Padding
    rows (b outside [0, B)) and rows without a valid entry are all zeros.
    """
    p = as_f32_probs(probs)
    if p.ndim != 2:
        raise ValueError(f"probs must have rank 2, got shape {p.shape}")
    top_p = _flat(top_p).astype(np.float32)
    top_k = _flat(top_k).astype(np.int64)
    batch_ids = _flat(batch_id_per_token_output).astype(np.int64)
    batch = len(top_p)
    min_p = _min_p(min_p, batch)
    out = np.zeros(p.shape, dtype=np.float32)
    for t in range(p.shape[0]):
        b = int(batch_ids[t])
        if not 0 <= b < batch:
            continue
        s = sample_set(p[t], float(top_p[b]), int(top_k[b]), float(min_p[b]))
        out[t, s] = renormalised(prob_mass(p[t, s]))
    return out


__all__ = [
    "MAX_CANDIDATE_LEN",
    "SAMPLE_STREAMS",
    "as_f32_probs",
    "check_sample_stream",
    "bf16_bits_to_f32",
    "min_p_kept",
    "renormalised",
    "sample_row",
    "sample_set",
    "sample_tokens",
    "sampling_distribution",
    "top_k_top_p_probs",
    "top_p_candidates",
    "topp_threshold",
]

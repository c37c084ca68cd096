"""``top_p_candidates`` and ``sample_tokens`` (SPEC.md), as Paddle ops.

Both return new tensors, allocated once per call on the place of ``probs``
(see ``docs/ops/sampling.md`` for why this keeps CUDA Graph capture working).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastspec.ops._library import FastspecArgumentError, run_op
from fastspec.reference.sampling import check_sample_stream

if TYPE_CHECKING:
    import paddle

MAX_CANDIDATE_LEN = 1024
_PROB_DTYPES = ("float32", "float16", "bfloat16")


def _dtype(t) -> str:
    return str(t.dtype).replace("paddle.", "")


def _check_dtype(op: str, name: str, t, allowed: tuple[str, ...]) -> None:
    got = _dtype(t)
    if got not in allowed:
        raise FastspecArgumentError(f"{op}: argument '{name}' must be {' or '.join(allowed)}, got {got}")


def _shape(t) -> list[int]:
    return list(t.shape)


def _check_probs(op: str, probs) -> tuple[int, int]:
    _check_dtype(op, "probs", probs, _PROB_DTYPES)
    shape = _shape(probs)
    if len(shape) != 2:
        raise FastspecArgumentError(f"{op}: argument 'probs' must have rank 2 [T, V], got shape {shape}")
    return shape[0], shape[1]


def _check_per_request(op: str, name: str, t, dtype: str, batch: int | None) -> int:
    _check_dtype(op, name, t, (dtype,))
    shape = _shape(t)
    if not (len(shape) == 1 or (len(shape) == 2 and shape[1] == 1)):
        raise FastspecArgumentError(f"{op}: argument '{name}' must have shape [B] or [B, 1], got {shape}")
    if batch is not None and batch >= 0 and shape[0] >= 0 and shape[0] != batch:
        raise FastspecArgumentError(f"{op}: argument '{name}' has {shape[0]} rows, expected B = {batch}")
    return shape[0]


def _check_vector(op: str, name: str, t, dtype: str, length: int, what: str) -> None:
    _check_dtype(op, name, t, (dtype,))
    shape = _shape(t)
    if len(shape) != 1:
        raise FastspecArgumentError(f"{op}: argument '{name}' must have rank 1, got shape {shape}")
    if length >= 0 and shape[0] >= 0 and shape[0] != length:
        raise FastspecArgumentError(f"{op}: argument '{name}' has {shape[0]} entries, expected {what} = {length}")


def top_p_candidates(
    probs: paddle.Tensor,
    top_p: paddle.Tensor,
    batch_id_per_token_output: paddle.Tensor,
    *,
    max_candidate_len: int,
) -> tuple[paddle.Tensor, paddle.Tensor, paddle.Tensor]:
    """The top-p candidates of every output row, in probability order.

    Args:
        probs: ``[T, V]`` float32, float16 or bfloat16 (computed in float32).
        top_p: float32 ``[B]`` (or ``[B, 1]``), whatever the dtype of ``probs``.
        batch_id_per_token_output: int32 ``[T]``; a value outside ``[0, B)`` marks a padding row.
        max_candidate_len: K', in ``[1, min(V, 1024)]``.

    Returns:
        ``(candidate_ids int64 [T, K'], candidate_scores float32 [T, K'], candidate_lens int32 [T])``:
        the first K' valid tokens (finite, > 0) by probability descending then id ascending, cut
        to the top-p prefix (threshold from the mass of every valid entry of the row, exact
        integer arithmetic); slots past the length hold id -1 and score 0; padding rows and
        rows without a valid entry have length 0.

    Raises:
        FastspecArgumentError (a ValueError) naming the argument, for a wrong dtype, rank, shape,
        place or attribute value; TypeError for a non-int attribute.
    """
    op = "top_p_candidates"
    rows, vocab = _check_probs(op, probs)
    _check_per_request(op, "top_p", top_p, "float32", None)
    _check_vector(op, "batch_id_per_token_output", batch_id_per_token_output, "int32", rows, "T")
    if not isinstance(max_candidate_len, int) or isinstance(max_candidate_len, bool):
        raise TypeError(f"{op}: attribute 'max_candidate_len' must be an int, got {type(max_candidate_len).__name__}")
    kmax = min(vocab, MAX_CANDIDATE_LEN) if vocab >= 0 else MAX_CANDIDATE_LEN
    if not 1 <= max_candidate_len <= kmax:
        raise FastspecArgumentError(f"{op}: attribute 'max_candidate_len' must be in [1, min(V, 1024) = {kmax}], got {max_candidate_len}")
    outs = run_op(
        "fastspec_top_p_candidates",
        {"probs": probs, "top_p": top_p, "batch_id_per_token_output": batch_id_per_token_output},
        {"max_candidate_len": max_candidate_len},
        ["candidate_ids", "candidate_scores", "candidate_lens"],
    )
    return tuple(outs)


def sample_tokens(
    probs: paddle.Tensor,
    top_p: paddle.Tensor,
    top_k: paddle.Tensor,
    seed: paddle.Tensor,
    step_idx: paddle.Tensor,
    batch_id_per_token_output: paddle.Tensor,
    cu_seqlens_q_output: paddle.Tensor,
    *,
    stream: int = 1,  # STREAM_TARGET (a literal: dy2static re-creates this signature without our globals)
) -> paddle.Tensor:
    """One seeded token per output row from the top-k ∩ top-p renormalised distribution.

    Args:
        probs: ``[T, V]`` float32, float16 or bfloat16.
        top_p: float32 ``[B]``; top_k: int32 ``[B]`` (``<= 0`` or ``>= V``: no top-k);
        seed: int64 ``[B]``; step_idx: int64 ``[B]`` (generated tokens so far).
        batch_id_per_token_output: int32 ``[T]``; cu_seqlens_q_output: int32 ``[B + 1]``.
        stream: the random stream, ``fastspec.reference.STREAM_TARGET`` (the target's samples,
            the default) or ``STREAM_DRAFT`` (a draft model's samples: the request's own seed,
            draws independent of the target's). Op attribute ``rand_stream``.

    Returns:
        ``tokens`` int64 ``[T]``: row ``t`` of request ``b`` is drawn with
        ``rand64(seed[b], step_idx[b] + t - cu_seqlens_q_output[b], stream)`` from the top-p
        prefix of the first ``top_k`` valid tokens, re-ordered by ascending id; -1 for padding
        rows and rows without a valid entry. Batch-invariant and reproducible.

    Raises:
        FastspecArgumentError (a ValueError) naming the argument, for a wrong dtype, rank,
        shape or place, or a ``stream`` other than TARGET or DRAFT.
    """
    op = "sample_tokens"
    try:
        rand_stream = check_sample_stream(stream)
    except ValueError as error:
        raise FastspecArgumentError(str(error)) from None
    rows, _ = _check_probs(op, probs)
    batch = _check_per_request(op, "top_p", top_p, "float32", None)
    _check_per_request(op, "top_k", top_k, "int32", batch)
    _check_per_request(op, "seed", seed, "int64", batch)
    _check_per_request(op, "step_idx", step_idx, "int64", batch)
    _check_vector(op, "batch_id_per_token_output", batch_id_per_token_output, "int32", rows, "T")
    _check_vector(op, "cu_seqlens_q_output", cu_seqlens_q_output, "int32", batch + 1 if batch >= 0 else -1, "B + 1")
    (tokens,) = run_op(
        "fastspec_sample_tokens",
        {
            "probs": probs,
            "top_p": top_p,
            "top_k": top_k,
            "seed": seed,
            "step_idx": step_idx,
            "batch_id_per_token_output": batch_id_per_token_output,
            "cu_seqlens_q_output": cu_seqlens_q_output,
        },
        {"rand_stream": rand_stream},
        ["tokens"],
    )
    return tokens

"""The kernels without Paddle: numpy arrays on the CPU, PyTorch or CuPy tensors on CUDA.

Built by ``python setup_ops.py --bindings-only`` (no Paddle needed). This is
how the GPU tests and benchmarks run the CUDA kernels on a host that has no
Paddle GPU build, and how another framework can call them. Arrays must be
C-contiguous with the dtypes of SPEC.md; nothing is copied or converted.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np


@functools.cache
def module() -> Any:
    """The compiled ``fastspec_kernels`` extension."""
    try:
        from fastspec._lib import fastspec_kernels
    except ImportError as error:
        raise ImportError(
            "fastspec's pybind11 bindings are not built: run `python setup_ops.py --bindings-only`"
        ) from error
    return fastspec_kernels


def address(array: Any) -> int:
    """Data address of a numpy array, a torch tensor or a cupy array."""
    if isinstance(array, np.ndarray):
        if not array.flags.c_contiguous:
            raise ValueError("arrays passed to the kernels must be C-contiguous")
        return array.ctypes.data
    if hasattr(array, "data_ptr"):  # torch
        if not array.is_contiguous():
            raise ValueError("tensors passed to the kernels must be contiguous")
        return array.data_ptr()
    if hasattr(array, "data") and hasattr(array.data, "ptr"):  # cupy
        return array.data.ptr
    raise TypeError(f"cannot take the address of {type(array).__name__}")


def on_gpu(array: Any) -> bool:
    return not isinstance(array, np.ndarray)


def current_stream(array: Any) -> int:
    """The current CUDA stream of the framework that owns ``array``."""
    if hasattr(array, "data_ptr"):
        import torch

        return torch.cuda.current_stream(array.device).cuda_stream
    import cupy

    return cupy.cuda.get_current_stream().ptr


def launch(name: str, args: Any, anchor: Any, stream: int | None) -> None:
    """Runs kernel ``name`` on the CPU for numpy arrays, else on CUDA on ``stream`` (default: current)."""
    m = module()
    if on_gpu(anchor):
        getattr(m, f"{name}_cuda")(args, current_stream(anchor) if stream is None else stream)
    else:
        getattr(m, f"{name}_cpu")(args)


def ngram_match(
    token_ids_all: Any,
    prompt_lens: Any,
    step_idx: Any,
    draft_token_num: Any,
    draft_tokens: Any,
    seq_lens_this_time: Any,
    seq_lens_encoder: Any,
    seq_lens_decoder: Any,
    max_dec_len: Any,
    *,
    max_ngram_size: int,
    min_ngram_size: int = 1,
    token_budget: int = 0,
    stream: int | None = None,
) -> None:
    """``ngram_match`` in place on raw arrays (CPU for numpy, CUDA otherwise)."""
    launch("ngram_match", _ngram_args(locals()), token_ids_all, stream)


def _ngram_args(a: dict) -> Any:
    """The bindings' argument pack of both n-gram kernels."""
    names = ("token_ids_all", "prompt_lens", "step_idx", "draft_token_num", "draft_tokens",
             "seq_lens_this_time", "seq_lens_encoder", "seq_lens_decoder", "max_dec_len")
    batch, max_model_len = a["token_ids_all"].shape
    return module().NgramArgs(
        *(address(a[name]) for name in names), batch, max_model_len, a["draft_tokens"].shape[1],
        a["max_ngram_size"], a["min_ngram_size"], a["token_budget"],
    )


def prob_dtype_code(probs: Any) -> int:
    """The kernels' dtype tag of a probability array: float32, float16, or bfloat16.

    numpy (and cupy) have no bfloat16: a ``uint16`` array is read as bfloat16 bits.
    """
    m = module()
    name = str(probs.dtype).replace("torch.", "")
    codes = {"float32": m.PROB_F32, "float16": m.PROB_F16, "bfloat16": m.PROB_BF16, "uint16": m.PROB_BF16}
    if name not in codes:
        raise TypeError(f"probs must be float32, float16 or bfloat16, got {name}")
    return codes[name]


def top_p_candidates(
    probs: Any,
    top_p: Any,
    batch_id_per_token_output: Any,
    candidate_ids: Any,
    candidate_scores: Any,
    candidate_lens: Any,
    *,
    max_candidate_len: int,
    num_threads: int = 0,
    stream: int | None = None,
) -> None:
    """``top_p_candidates`` into caller-provided outputs (CPU for numpy, CUDA otherwise).

    ``candidate_ids`` int64 ``[T, K']``, ``candidate_scores`` float32 ``[T, K']`` and
    ``candidate_lens`` int32 ``[T]`` are fully overwritten. ``num_threads`` (CPU only):
    1 keeps the work on the calling thread, anything else uses the kernels' thread pool.
    """
    m = module()
    rows, vocab = probs.shape
    for name, arr, shape in (("candidate_ids", candidate_ids, (rows, max_candidate_len)),
                             ("candidate_scores", candidate_scores, (rows, max_candidate_len)),
                             ("candidate_lens", candidate_lens, (rows,)),
                             ("batch_id_per_token_output", batch_id_per_token_output, (rows,))):
        if tuple(arr.shape) != shape:
            raise ValueError(f"top_p_candidates: '{name}' must have shape {list(shape)}, got {list(arr.shape)}")
    args = (address(probs), prob_dtype_code(probs), address(top_p), address(batch_id_per_token_output),
            address(candidate_ids), address(candidate_scores), address(candidate_lens), rows, vocab,
            int(top_p.shape[0]), max_candidate_len)
    if on_gpu(probs):
        m.top_p_candidates_cuda(*args, current_stream(probs) if stream is None else stream)
    else:
        m.top_p_candidates_cpu(*args, num_threads)


def sample_tokens(
    probs: Any,
    top_p: Any,
    top_k: Any,
    seed: Any,
    step_idx: Any,
    batch_id_per_token_output: Any,
    cu_seqlens_q_output: Any,
    tokens: Any,
    *,
    num_threads: int = 0,
    stream: int | None = None,
    rand_stream: int = 1,
) -> None:
    """``sample_tokens`` into the caller's int64 ``tokens [T]`` (CPU for numpy, CUDA otherwise).

    ``rand_stream`` is the random stream (``fastspec.reference.sample_tokens``' ``stream``):
    ``STREAM_TARGET`` (1, the default) or ``STREAM_DRAFT`` (5); anything else raises ValueError.
    It is not called ``stream`` here because ``stream`` is the CUDA stream handle, as in every
    function of this module.
    """
    from fastspec.reference.sampling import check_sample_stream

    rand_stream = check_sample_stream(rand_stream, "rand_stream")
    m = module()
    rows, vocab = probs.shape
    batch = int(top_p.shape[0])
    for name, arr, n in (("top_k", top_k, batch), ("seed", seed, batch), ("step_idx", step_idx, batch),
                         ("batch_id_per_token_output", batch_id_per_token_output, rows),
                         ("cu_seqlens_q_output", cu_seqlens_q_output, batch + 1), ("tokens", tokens, rows)):
        if int(arr.shape[0]) != n:
            raise ValueError(f"sample_tokens: '{name}' must have {n} entries, got {int(arr.shape[0])}")
    args = (address(probs), prob_dtype_code(probs), address(top_p), address(top_k), address(seed),
            address(step_idx), address(batch_id_per_token_output), address(cu_seqlens_q_output),
            address(tokens), rows, vocab, batch)
    if on_gpu(probs):
        m.sample_tokens_cuda(*args, current_stream(probs) if stream is None else stream, rand_stream=rand_stream)
    else:
        m.sample_tokens_cpu(*args, num_threads, rand_stream=rand_stream)


_VERIFY_STRATEGIES = {"topp": 0, "greedy": 1, "target_match": 2, "rejection": 3}


def verify_draft_tokens(
    accept_tokens: Any,
    accept_num: Any,
    draft_tokens: Any,
    target_tokens: Any | None,
    candidate_ids: Any | None,
    candidate_scores: Any | None,
    candidate_lens: Any | None,
    seed: Any,
    step_idx: Any,
    stop_flags: Any,
    is_block_step: Any,
    seq_lens_encoder: Any,
    seq_lens_this_time: Any,
    cu_seqlens_q_output: Any,
    reasoning_status: Any | None,
    max_dec_len: Any,
    end_tokens: Any,
    *,
    strategy: str,
    accept_all: bool = False,
    reject_all: bool = False,
    stream: int | None = None,
    target_probs: Any | None = None,
    draft_probs: Any | None = None,
) -> None:
    """``verify_draft_tokens`` in place on raw arrays (CPU for numpy, CUDA otherwise).

    Absent optional tensors are None. ``strategy``: "topp", "greedy", "target_match" or
    "rejection" (with ``target_probs`` and ``draft_probs`` ``[T, V]``, the same dtype).
    """
    m = module()
    name = str(getattr(strategy, "value", strategy)).lower()
    if name not in _VERIFY_STRATEGIES:
        raise ValueError(f"verify_draft_tokens: unknown strategy {strategy!r}")
    batch, cols = accept_tokens.shape
    if name == "topp":
        if candidate_ids is None or candidate_scores is None or candidate_lens is None:
            raise ValueError("verify_draft_tokens: strategy 'topp' needs candidate_ids, candidate_scores, candidate_lens")
        rows, candidate_cols = candidate_ids.shape
    elif name == "rejection":
        if target_probs is None or draft_probs is None:
            raise ValueError("verify_draft_tokens: strategy 'rejection' needs target_probs and draft_probs")
        if tuple(draft_probs.shape) != tuple(target_probs.shape) or len(target_probs.shape) != 2:
            raise ValueError("verify_draft_tokens: 'target_probs' and 'draft_probs' must both have shape [T, V]")
        if prob_dtype_code(target_probs) != prob_dtype_code(draft_probs):
            raise ValueError("verify_draft_tokens: 'draft_probs' must have the dtype of 'target_probs'")
        rows, candidate_cols = int(target_probs.shape[0]), 0
    else:
        if target_tokens is None:
            raise ValueError(f"verify_draft_tokens: strategy {name!r} needs target_tokens")
        rows, candidate_cols = int(target_tokens.shape[0]), 0
    if int(cu_seqlens_q_output.shape[0]) != batch + 1:
        raise ValueError(f"verify_draft_tokens: 'cu_seqlens_q_output' must have {batch + 1} entries")
    args = m.VerifyArgs(
        *(0 if x is None else address(x)
          for x in (accept_tokens, accept_num, draft_tokens, target_tokens, candidate_ids, candidate_scores,
                    candidate_lens, seed, step_idx, stop_flags, is_block_step, seq_lens_encoder,
                    seq_lens_this_time, cu_seqlens_q_output, reasoning_status, max_dec_len, end_tokens)),
        batch, cols, rows, candidate_cols, int(end_tokens.shape[0]), _VERIFY_STRATEGIES[name],
        bool(accept_all), bool(reject_all),
    )
    if name == "rejection":
        args.target_probs, args.draft_probs = address(target_probs), address(draft_probs)
        args.probs_dtype, args.vocab = prob_dtype_code(target_probs), int(target_probs.shape[1])
    launch("verify_draft_tokens", args, accept_tokens, stream)


def update_model_status(
    seq_lens_encoder: Any,
    seq_lens_decoder: Any,
    seq_lens_this_time: Any,
    step_idx: Any,
    stop_flags: Any,
    accept_tokens: Any,
    accept_num: Any,
    draft_tokens: Any,
    token_ids_all: Any,
    prompt_lens: Any,
    is_block_step: Any,
    max_dec_len: Any,
    end_tokens: Any,
    has_running: Any,
    *,
    stream: int | None = None,
) -> None:
    """``update_model_status`` in place on raw arrays; writes the caller's bool ``has_running [1]``."""
    m = module()
    batch, max_model_len = token_ids_all.shape
    args = m.UpdateArgs(
        *(address(x) for x in (seq_lens_encoder, seq_lens_decoder, seq_lens_this_time, step_idx, stop_flags,
                               accept_tokens, accept_num, draft_tokens, token_ids_all, prompt_lens,
                               is_block_step, max_dec_len, end_tokens, has_running)),
        batch, int(accept_tokens.shape[1]), max_model_len, int(end_tokens.shape[0]),
    )
    launch("update_model_status", args, token_ids_all, stream)


def ngram_append(
    token_ids_all: Any,
    prompt_lens: Any,
    step_idx: Any,
    draft_token_num: Any,
    draft_tokens: Any,
    seq_lens_this_time: Any,
    seq_lens_encoder: Any,
    seq_lens_decoder: Any,
    max_dec_len: Any,
    *,
    max_ngram_size: int,
    min_ngram_size: int = 1,
    token_budget: int = 0,
    stream: int | None = None,
) -> None:
    """``ngram_append`` (hybrid drafting) in place on raw arrays (CPU for numpy, CUDA otherwise)."""
    launch("ngram_append", _ngram_args(locals()), token_ids_all, stream)

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
    m = module()
    batch, max_model_len = token_ids_all.shape
    args = m.NgramArgs(
        *(address(x) for x in (token_ids_all, prompt_lens, step_idx, draft_token_num, draft_tokens,
                               seq_lens_this_time, seq_lens_encoder, seq_lens_decoder, max_dec_len)),
        batch, max_model_len, draft_tokens.shape[1], max_ngram_size, min_ngram_size, token_budget,
    )
    if on_gpu(token_ids_all):
        m.ngram_match_cuda(args, current_stream(token_ids_all) if stream is None else stream)
    else:
        m.ngram_match_cpu(args)

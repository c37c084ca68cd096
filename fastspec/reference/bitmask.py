"""Reference ``apply_token_bitmask``: the rule of docs/ops/apply_token_bitmask.md, one row at a time."""

from __future__ import annotations

import numpy as np

# -inf of each logits dtype, as the bits the kernels write (numpy has no bfloat16: a uint16 array is bf16 bits)
NEG_INF_BITS = {
    np.dtype(np.float32): np.uint32(0xFF800000),
    np.dtype(np.float16): np.uint16(0xFC00),
    np.dtype(np.uint16): np.uint16(0xFF80),
}


def allowed_tokens(words: np.ndarray, vocab: int) -> np.ndarray:
    """bool ``[V]``: token ``v`` is allowed iff ``v < 32 W`` and bit ``v % 32`` of ``words[v // 32]`` is set."""
    words = np.asarray(words, dtype=np.int32).reshape(-1).view(np.uint32)
    bits = (words[:, None] >> np.arange(32, dtype=np.uint32)) & np.uint32(1)
    allowed = np.zeros(vocab, dtype=bool)
    covered = min(vocab, 32 * len(words))
    allowed[:covered] = bits.reshape(-1)[:covered] == 1
    return allowed


def apply_token_bitmask(logits: np.ndarray, token_bitmask: np.ndarray, bitmask_index: np.ndarray) -> np.ndarray:
    """Returns a masked copy of ``logits`` ``[T, V]`` (float32, float16, or uint16 holding bfloat16 bits).

    Row ``t`` with ``m = bitmask_index[t]`` in ``[0, M)`` keeps the tokens ``token_bitmask[m]`` allows; every
    other entry becomes -inf (as bits). Rows with an index outside ``[0, M)`` are copied unchanged.
    """
    out = np.array(logits, copy=True)
    mask = np.asarray(token_bitmask, dtype=np.int32)
    index = np.asarray(bitmask_index).reshape(-1)
    bits = out.view(np.uint32 if out.dtype == np.float32 else np.uint16)
    neg_inf = NEG_INF_BITS[out.dtype]
    for t in range(out.shape[0]):
        m = int(index[t])
        if 0 <= m < mask.shape[0]:
            bits[t, ~allowed_tokens(mask[m], out.shape[1])] = neg_inf
    return out

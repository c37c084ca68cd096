"""Philox4x32-10 and ``rand64(seed, position, stream)`` in plain Python ints."""

from __future__ import annotations

from fastspec.core.streams import (  # noqa: F401  (the streams, re-exported beside rand64)
    STREAM_ACCEPT,
    STREAM_BLOCK,
    STREAM_DRAFT,
    STREAM_RESAMPLE,
    STREAM_TARGET,
    STREAM_TOPP,
)

_M0, _M1 = 0xD2511F53, 0xCD9E8D57
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_MASK32 = 0xFFFFFFFF
_MASK64 = (1 << 64) - 1


def philox4x32_10(counter: tuple[int, int, int, int], key: tuple[int, int]) -> tuple[int, int, int, int]:
    """Philox4x32 with 10 rounds and the Random123 constants."""
    c0, c1, c2, c3 = (c & _MASK32 for c in counter)
    k0, k1 = (k & _MASK32 for k in key)
    for _ in range(10):
        p0 = _M0 * c0
        p1 = _M1 * c2
        c0, c1, c2, c3 = (
            (p1 >> 32) ^ c1 ^ k0,
            p1 & _MASK32,
            (p0 >> 32) ^ c3 ^ k1,
            p0 & _MASK32,
        )
        k0 = (k0 + _W0) & _MASK32
        k1 = (k1 + _W1) & _MASK32
    return c0, c1, c2, c3


def rand64(seed: int, position: int, stream: int, index: int = 0) -> int:
    """The 64-bit random number of docs/ops/conventions.md: key from the seed, counter from position,
    stream and index (0 but for STREAM_BLOCK)."""
    s = int(seed) & _MASK64
    p = int(position) & _MASK64
    x = philox4x32_10((p & _MASK32, p >> 32, stream, index & _MASK32), (s & _MASK32, s >> 32))
    return x[0] | (x[1] << 32)


def scale_rand64(r: int, total: int) -> int:
    """floor(r * total / 2^64): a uniform index into [0, total)."""
    return (r * total) >> 64

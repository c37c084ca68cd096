"""Keeps freed CPU memory in the process for the next op's outputs (glibc).

Paddle gives every op call new memory for its outputs. glibc serves a block of more than 128 KB from a
fresh ``mmap`` (the limit rises only as such blocks are freed) and returns free memory at the top of the
heap to the system, so an output of a few megabytes is faulted in page by page at every call: a
``top_k_top_p_probs`` with a 3 MB output took 751 page faults and 1.7 ms a call where the same call on
reused memory takes 0.4 ms. Raising both limits keeps that memory in the heap, as a GPU runtime's
caching allocator does. ``FASTSPEC_KEEP_CPU_MEMORY=0`` leaves glibc's defaults.
"""

from __future__ import annotations

import ctypes
import os

# mallopt's parameters (malloc.h) and the values set
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD = 32 << 20  # blocks below this come from the heap: glibc's largest allowed value on 64-bit
TRIM_THRESHOLD = 256 << 20  # free memory kept at the top of the heap before any is returned


def keep_freed_cpu_memory() -> bool:
    """Sets glibc's mmap and trim thresholds (once per process is enough; repeating is harmless).
    Returns whether they were set: False with ``FASTSPEC_KEEP_CPU_MEMORY=0`` or without glibc's ``mallopt``."""
    if os.environ.get("FASTSPEC_KEEP_CPU_MEMORY", "1").strip() == "0":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (musl, macOS, Windows)
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1

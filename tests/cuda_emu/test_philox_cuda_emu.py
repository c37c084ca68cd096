"""The CUDA Philox kernel (custom_ops/cuda/philox.cu, element-wise rand64 over several blocks) on
the emulated device equals the host rand64 and the numpy reference."""

from __future__ import annotations

import numpy as np

from fastspec import arrays
from fastspec.reference import rng as ref_rng


def test_rand64_kernel_equals_the_host_and_the_reference():
    rng = np.random.default_rng(8)
    n = 700  # three blocks of 256 threads, the last one partly idle
    seeds = [int(v) for v in rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)]
    positions = [int(v) for v in rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)]
    module = arrays.module()
    for stream in (0, 1, 2):
        got = module.rand64_cuda_emulator(seeds, positions, stream)
        assert got == [module.rand64(s, p, stream) for s, p in zip(seeds, positions)]
        assert got[:20] == [int(ref_rng.rand64(s, p, stream)) for s, p in zip(seeds[:20], positions[:20])]

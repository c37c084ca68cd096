// Included first by every .cu file: the CUDA runtime under nvcc, the host
// emulation of the CUDA execution model (emulation/cuda_emu.h) otherwise, and
// the two spellings the emulation needs a macro for. Under nvcc both expand to
// exactly the CUDA they stand for, so the device code is unchanged.
#pragma once

#if defined(__CUDACC__)
#include <cuda_runtime.h>
// kernel<<<grid, block, shared_bytes, stream>>>(args...)
#define FS_CUDA_LAUNCH(kernel, grid, block, shared_bytes, stream, ...) \
  kernel<<<(grid), (block), (shared_bytes), (stream)>>>(__VA_ARGS__)
// The launch's dynamic shared memory as an array of T.
#define FS_DYNAMIC_SHARED(T, name) extern __shared__ T name[]
#else
#include "emulation/cuda_emu.h"
#endif

// The block-wide primitives the CUDA kernels use: CUB's under nvcc, the
// emulation's (emulation/block_emu.h, same contract) otherwise. Only
// BlockReduce::Sum (its result defined in thread 0 only) and BlockScan's
// ExclusiveSum / InclusiveSum are used; as with CUB, a barrier must separate
// two uses of the same temporary storage.
#pragma once

#if defined(__CUDACC__)
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#else
#include "emulation/block_emu.h"
#endif

namespace fastspec {
namespace block {

#if defined(__CUDACC__)
template <typename T, int kThreads>
using Reduce = cub::BlockReduce<T, kThreads>;
template <typename T, int kThreads>
using Scan = cub::BlockScan<T, kThreads>;
#else
template <typename T, int kThreads>
using Reduce = cuda_emu::BlockReduce<T, kThreads>;
template <typename T, int kThreads>
using Scan = cuda_emu::BlockScan<T, kThreads>;
#endif

}  // namespace block
}  // namespace fastspec

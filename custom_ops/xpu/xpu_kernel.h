// Included first by every .xpu file: the XPU3 kernel headers under the
// Kunlunxin XTDK (FASTSPEC_XTDK), the host emulation (emulation/xpu_emu.h)
// otherwise, and the memory budgets every kernel asserts its buffers against.
#pragma once

#if defined(FASTSPEC_XTDK)
#include "xpu/kernel/cluster.h"
#include "xpu/kernel/cluster_primitive.h"
#else
#include "emulation/xpu_emu.h"
#endif

#include "xpu_types.h"
#if !defined(FASTSPEC_XTDK)
#include "kernels.h"  // the launchers' declarations: a definition that drifts leaves one undefined
#endif

#if defined(FASTSPEC_CHECK_32BIT)  // the 32-bit compile check (tests/xpu/test_compile_32bit.py)
static_assert(sizeof(void*) == 4 && sizeof(long) == 4, "the 32-bit check must compile for a 32-bit target");
#endif

namespace fastspec {
namespace xpu {

// Per-core local memory (LM) for a kernel's explicit buffers when 64 cores
// run: about 6 KB, the stack included, so kernels keep theirs well below.
constexpr int kLocalMemoryBytes = 6 * 1024;
constexpr int kLocalBufferBudget = 5 * 1024;  // what a kernel's own LM buffers may take
constexpr int kSharedMemoryBytes = 256 * 1024;  // per cluster (SM)
constexpr int kMaxCores = 64;                   // per cluster; SM arrays indexed by core are this long

// The global index of this core and the number of cores of the launch.
inline __device__ int global_core() { return cluster_id() * core_num() + core_id(); }
inline __device__ int global_cores() { return cluster_num() * core_num(); }

// One value of a per-slot (or per-row) array in global memory, through LM.
template <typename T>
inline __device__ T load_scalar(const T __global_ptr__* array, int64_t i) {
  T value;
  GM2LM(array + i, &value, static_cast<int>(sizeof(T)));
  return value;
}

}  // namespace xpu
}  // namespace fastspec

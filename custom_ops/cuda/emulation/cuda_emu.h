// A host emulation of the CUDA execution model, so that fastspec's .cu files
// compile with g++ and run on the host (docs/cuda_emulation.md):
//
//   * a launch runs its blocks one after another (forward, reversed or in a
//     seeded shuffle); the threads of a block are fibers on the calling host
//     thread, so __syncthreads and the warp intrinsics are real meeting points;
//   * __shared__ variables are static objects (the library's writable image is
//     the static shared memory) and dynamic shared memory is a buffer of the
//     launch's size; what a block wrote is poisoned before the next block;
//   * the kernels are compiled with GCC's ThreadSanitizer instrumentation, whose
//     callbacks (cuda_emu_checks.cc, no TSan runtime) see every load and store:
//     a shared byte read before this block wrote it, two threads touching a
//     shared byte between two barriers with a plain write, and a global access
//     outside the arrays the launch was given are reported;
//   * a barrier that the block's live threads reach at different places, a warp
//     intrinsic whose mask names a lane that never joins, and a launch over the
//     H100/H200 limits are reported.
// The first broken rule fails the launch (cudaGetLastError returns
// cudaErrorLaunchFailure and cuda_emu::last_error() names rule, block, thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <utility>

#include "cuda_emu_types.h"

// ---- the dialect's keywords ----------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)
// One object per kernel: blocks run one at a time. (GCC drops a section
// attribute on the static locals of a template, so the checks treat this
// library's writable image as the static shared memory instead: a kernel has
// no other business there.)
#define __shared__ static

// The launchers compiled here get an _emulated suffix, so that one library may
// hold both these and the nvcc-built ones (launchers.h declares them): every
// op's, generated from the schema, and the helpers' below.
#include "fastspec/cuda_emulated_names.h"
#define ngram_search_then_budget_cuda ngram_search_then_budget_cuda_emulated
#define rand64_cuda rand64_cuda_emulated

using cudaError_t = cuda_emu::Error;
using cudaStream_t = cuda_emu::Stream;
using cuda_emu::cudaErrorInvalidValue;
using cuda_emu::cudaErrorLaunchFailure;
using cuda_emu::cudaSuccess;

struct uint3 {
  unsigned int x, y, z;
};
struct dim3 {
  unsigned int x = 1, y = 1, z = 1;
  dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : x(x_), y(y_), z(z_) {}
};

namespace cuda_emu {

// ---- ids of the running thread (the runtime's, not instrumented) -----------
uint3 thread_idx();
uint3 block_idx();
dim3 block_dim();
dim3 grid_dim();
int thread_rank();  // the linear thread index within the block

// ---- barriers: kind of the call and where it was written --------------------
enum BarrierKind : int { kSync = 0, kSyncOr = 1, kSyncAnd = 2, kSyncCount = 3 };
int barrier(BarrierKind kind, int predicate, const char* file, int line);

// ---- warp intrinsics: a lane waits until every lane of `mask` made the same call
enum WarpOp : int { kMatchAny = 0, kReduceAdd = 1, kReduceMax = 2, kReduceMin = 3, kBallot = 4, kSyncWarp = 5 };
unsigned warp_op(WarpOp op, unsigned mask, unsigned value, const char* file, int line);

// ---- atomics: checked like any access, as atomic ones ------------------------
enum AtomicOp : int { kAdd = 0, kMin = 1, kMax = 2, kExch = 3, kCas = 4, kOr = 5, kAnd = 6 };
unsigned int atomic32(AtomicOp op, unsigned int* address, unsigned int value, unsigned int compare, bool is_signed);
unsigned long long atomic64(AtomicOp op, unsigned long long* address, unsigned long long value,
                            unsigned long long compare, bool is_signed);

// ---- launch ---------------------------------------------------------------------
void* dynamic_shared(const char* file, int line);
using KernelBody = void (*)(void* context);
void launch(dim3 grid, dim3 block, size_t shared_bytes, const void* params, size_t params_bytes, KernelBody body,
            void* context);

template <typename... P>
struct KernelCall {
  void (*kernel)(P...);
  std::tuple<P...> params;  // converted once, as the CUDA runtime copies them
  static void run(void* call) {
    auto& c = *static_cast<KernelCall*>(call);
    std::apply(c.kernel, c.params);
  }
};

// Every thread reads the kernel and its parameters from `call` (a range the
// checks allow, as a kernel's parameter space).
template <typename... P, typename... A>
void launch(dim3 grid, dim3 block, size_t shared_bytes, Stream, void (*kernel)(P...), A&&... args) {
  KernelCall<P...> call{kernel, std::tuple<P...>(std::forward<A>(args)...)};
  launch(grid, block, shared_bytes, &call, sizeof(call), &KernelCall<P...>::run, &call);
}

Error get_last_error();  // and clear it, as cudaGetLastError does

template <typename T>
T atomic(AtomicOp op, T* address, T value, T compare = T()) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "CUDA atomics are 32 or 64 bits wide");
  constexpr bool is_signed = T(-1) < T(0);
  if constexpr (sizeof(T) == 4) {
    return static_cast<T>(atomic32(op, reinterpret_cast<unsigned int*>(address), static_cast<unsigned int>(value),
                                   static_cast<unsigned int>(compare), is_signed));
  } else {
    return static_cast<T>(atomic64(op, reinterpret_cast<unsigned long long*>(address),
                                   static_cast<unsigned long long>(value), static_cast<unsigned long long>(compare),
                                   is_signed));
  }
}

}  // namespace cuda_emu

// ---- the kernel-side API, spelled as CUDA spells it ----------------------------
#define threadIdx (::cuda_emu::thread_idx())
#define blockIdx (::cuda_emu::block_idx())
#define blockDim (::cuda_emu::block_dim())
#define gridDim (::cuda_emu::grid_dim())

// Each barrier is identified by where it is written (the call site).
inline void __syncthreads(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  cuda_emu::barrier(cuda_emu::kSync, 0, file, line);
}
inline int __syncthreads_or(int p, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return cuda_emu::barrier(cuda_emu::kSyncOr, p != 0, file, line);
}
inline int __syncthreads_and(int p, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return cuda_emu::barrier(cuda_emu::kSyncAnd, p != 0, file, line);
}
inline int __syncthreads_count(int p, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return cuda_emu::barrier(cuda_emu::kSyncCount, p != 0, file, line);
}

inline unsigned __match_any_sync(unsigned mask, int value, const char* file = __builtin_FILE(),
                                 int line = __builtin_LINE()) {
  return cuda_emu::warp_op(cuda_emu::kMatchAny, mask, static_cast<unsigned>(value), file, line);
}
inline unsigned __reduce_add_sync(unsigned mask, unsigned value, const char* file = __builtin_FILE(),
                                  int line = __builtin_LINE()) {
  return cuda_emu::warp_op(cuda_emu::kReduceAdd, mask, value, file, line);
}
inline unsigned __reduce_max_sync(unsigned mask, unsigned value, const char* file = __builtin_FILE(),
                                  int line = __builtin_LINE()) {
  return cuda_emu::warp_op(cuda_emu::kReduceMax, mask, value, file, line);
}
inline unsigned __reduce_min_sync(unsigned mask, unsigned value, const char* file = __builtin_FILE(),
                                  int line = __builtin_LINE()) {
  return cuda_emu::warp_op(cuda_emu::kReduceMin, mask, value, file, line);
}
inline unsigned __ballot_sync(unsigned mask, int predicate, const char* file = __builtin_FILE(),
                              int line = __builtin_LINE()) {
  return cuda_emu::warp_op(cuda_emu::kBallot, mask, predicate != 0, file, line);
}
inline void __syncwarp(unsigned mask = 0xffffffffu, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  cuda_emu::warp_op(cuda_emu::kSyncWarp, mask, 0, file, line);
}
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }

// CUDA's atomics on the emulated device, each a cuda_emu::atomic of its kind.
#define FS_EMU_ATOMIC(name, kind)                            \
  template <typename T>                                      \
  inline T name(T* address, T value) {                       \
    return cuda_emu::atomic(cuda_emu::kind, address, value); \
  }
FS_EMU_ATOMIC(atomicAdd, kAdd)
FS_EMU_ATOMIC(atomicMin, kMin)
FS_EMU_ATOMIC(atomicMax, kMax)
FS_EMU_ATOMIC(atomicExch, kExch)
FS_EMU_ATOMIC(atomicOr, kOr)
FS_EMU_ATOMIC(atomicAnd, kAnd)
#undef FS_EMU_ATOMIC
template <typename T>
inline T atomicCAS(T* address, T compare, T value) {
  return cuda_emu::atomic(cuda_emu::kCas, address, value, compare);
}

inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }

inline cudaError_t cudaGetLastError() { return cuda_emu::get_last_error(); }
const char* cudaGetErrorString(cudaError_t error);

// kernel<<<grid, block, shared_bytes, stream>>>(args...) under nvcc; the
// emulated launch here.
#define FS_CUDA_LAUNCH(kernel, grid, block, shared_bytes, stream, ...) \
  ::cuda_emu::launch((grid), (block), (shared_bytes), (stream), kernel, __VA_ARGS__)
// extern __shared__ T name[] under nvcc: the launch's dynamic shared memory.
#define FS_DYNAMIC_SHARED(T, name) T* const name = static_cast<T*>(::cuda_emu::dynamic_shared(__FILE__, __LINE__))

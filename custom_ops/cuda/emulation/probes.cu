// Small kernels that each break one rule (or, kProbeClean and the legal ones,
// none), so the tests can show that the CUDA emulation catches what it claims
// to (tests/cuda_emu/test_emulation.py). Compiled for the emulation only; not
// part of any op.
#include "../block_primitives.h"
#include "../cuda_kernel.h"
#include "launchers.h"

namespace fastspec {
namespace {

enum Probe : int {
  kProbeClean = 0,              // shared memory, every barrier kind, atomics, warp intrinsics, BlockReduce/Scan
  kProbeDivergentBarrier = 1,   // half the block waits at one __syncthreads, half at another
  kProbeUninitialisedShared = 2,// a shared byte read that no thread of the block wrote
  kProbeReadWriteRace = 3,      // a thread writes a shared value another reads, no barrier between
  kProbeWriteWriteRace = 4,     // every thread writes one shared value
  kProbeOutOfBoundsWrite = 5,   // a write one past the output array
  kProbeOutOfBoundsRead = 6,    // a read one past the input array
  kProbeTooManyThreads = 7,     // 1025 threads a block
  kProbeTooMuchDynamicShared = 8,  // 228 KiB of dynamic shared memory
  kProbeTooMuchStaticShared = 9,   // a 49 KiB __shared__ array
  kProbeWarpDivergence = 10,    // half a warp calls a full-mask warp intrinsic
  kProbeEarlyExit = 11,         // half the block returns, the rest meet at a barrier (legal)
  kProbeDynamicShared = 12,     // dynamic shared memory used right (legal)
};

constexpr int kThreads = 64;
constexpr int kOutPerThread = 5;
using Scan = block::Scan<int, kThreads>;
using Reduce = block::Reduce<int, kThreads>;

__global__ void clean_kernel(const int* in, int n, int* out, int) {
  __shared__ int values[kThreads];
  __shared__ int total;
  __shared__ union {
    Scan::TempStorage scan;
    Reduce::TempStorage reduce;
  } temp;
  const int t = threadIdx.x;
  const int v = in[t % n];
  values[t] = v;
  if (t == 0) total = 0;
  __syncthreads();
  const int next = values[(t + 1) % kThreads];
  const int odd = __syncthreads_count(v & 1);
  atomicAdd(&total, v);
  int before;
  Scan(temp.scan).ExclusiveSum(v, before);
  const int warp_sum = static_cast<int>(__reduce_add_sync(0xffffffffu, static_cast<unsigned>(v)));
  const int any_big = __syncthreads_or(v > 30);
  const int sum = Reduce(temp.reduce).Sum(v);
  __syncthreads();
  int* mine = out + (blockIdx.x * kThreads + t) * kOutPerThread;
  mine[0] = next;
  mine[1] = odd;
  mine[2] = before;
  mine[3] = warp_sum;
  mine[4] = total + any_big + (t == 0 ? sum : 0);
}

__global__ void divergent_barrier_kernel(const int*, int, int* out, int) {
  if (threadIdx.x < 32) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  out[threadIdx.x] = 1;
}

__global__ void uninitialised_kernel(const int*, int, int* out, int) {
  __shared__ int values[kThreads];
  if (threadIdx.x == 0) values[0] = 1;
  __syncthreads();
  out[threadIdx.x] = values[threadIdx.x];
}

__global__ void read_write_race_kernel(const int*, int, int* out, int) {
  __shared__ int values[kThreads];
  values[threadIdx.x] = threadIdx.x;
  __syncthreads();
  if (threadIdx.x == 0) values[1] = 5;
  out[threadIdx.x] = values[threadIdx.x];
}

__global__ void write_write_race_kernel(const int*, int, int* out, int) {
  __shared__ int value;
  value = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = value;
}

__global__ void out_of_bounds_write_kernel(const int*, int, int* out, int n_out) {
  if (threadIdx.x == kThreads - 1) out[n_out] = 1;
}

__global__ void out_of_bounds_read_kernel(const int* in, int n, int* out, int) {
  out[threadIdx.x] = in[threadIdx.x == kThreads - 1 ? n : 0];
}

__global__ void nothing_kernel(const int*, int, int* out, int) { out[0] = 1; }

__global__ void big_static_shared_kernel(const int*, int, int* out, int) {
  __shared__ char big[49 * 1024];
  big[threadIdx.x * (sizeof(big) - 1) / (kThreads - 1)] = 1;
  __syncthreads();
  out[threadIdx.x] = big[threadIdx.x * (sizeof(big) - 1) / (kThreads - 1)];
}

__global__ void warp_divergence_kernel(const int*, int, int* out, int) {
  if (threadIdx.x % 32 < 16) out[threadIdx.x] = static_cast<int>(__reduce_add_sync(0xffffffffu, 1u));
}

__global__ void early_exit_kernel(const int* in, int, int* out, int) {
  __shared__ int values[kThreads];
  if (threadIdx.x >= kThreads / 2) return;
  values[threadIdx.x] = in[0] + threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = values[kThreads / 2 - 1 - threadIdx.x];
}

__global__ void dynamic_shared_kernel(const int* in, int n, int* out, int) {
  FS_DYNAMIC_SHARED(int, values);
  values[threadIdx.x] = in[threadIdx.x % n];
  __syncthreads();
  out[threadIdx.x] = values[kThreads - 1 - threadIdx.x];
}

// Each probe's launch, in the order of Probe; every kernel takes (in, n, out, n_out) and uses what it needs.
struct ProbeLaunch {
  void (*kernel)(const int*, int, int*, int);
  int blocks, threads;
  size_t shared_bytes;
};
constexpr ProbeLaunch kLaunches[] = {
    {clean_kernel, 2, kThreads, 0},
    {divergent_barrier_kernel, 1, kThreads, 0},
    {uninitialised_kernel, 1, kThreads, 0},
    {read_write_race_kernel, 1, kThreads, 0},
    {write_write_race_kernel, 1, kThreads, 0},
    {out_of_bounds_write_kernel, 1, kThreads, 0},
    {out_of_bounds_read_kernel, 1, kThreads, 0},
    {nothing_kernel, 1, 1025, 0},
    {nothing_kernel, 1, kThreads, 228 * 1024},
    {big_static_shared_kernel, 1, kThreads, 0},
    {warp_divergence_kernel, 1, kThreads, 0},
    {early_exit_kernel, 1, kThreads, 0},
    {dynamic_shared_kernel, 1, kThreads, kThreads * sizeof(int)},
};
static_assert(sizeof(kLaunches) / sizeof(kLaunches[0]) == kProbeDynamicShared + 1, "a launch for every probe");

}  // namespace

cudaError_t cuda_probe_emulated(int which, const int* in, int n, int* out, int n_out) {
  if (which < kProbeClean || which > kProbeDynamicShared) return cudaErrorInvalidValue;
  const ProbeLaunch& p = kLaunches[which];
  FS_CUDA_LAUNCH(p.kernel, p.blocks, p.threads, p.shared_bytes, nullptr, in, n, out, n_out);
  return cudaGetLastError();
}

}  // namespace fastspec

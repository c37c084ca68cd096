// adaptive_plan and adaptive_observe on CUDA. The plan is one block: its threads
// write every slot's worth and count the prefilling slots, rank each candidate
// by counting the candidates before it (the ranking's order is total, so the
// ranks are a permutation), then thread 0 runs the scan in rank order (the
// float32 sums every backend runs in that one order) and the threads count each
// slot's drafts against its threshold. The observe is one thread per slot.
// The ranking reads the worths in tiles through shared memory: O(N^2 / threads)
// comparisons, N = B (K + 1) (1536 at B = 256, K = 5).
#include "cuda_kernel.h"

#include "fastspec/adaptive.h"

namespace fastspec {
namespace {

constexpr int kMaxThreads = 1024;
constexpr int kObserveThreads = 256;

__global__ void __launch_bounds__(kMaxThreads) plan_kernel(AdaptivePlanParams p) {
  __shared__ int prefill;
  __shared__ float threshold;
  __shared__ float tile[kMaxThreads];
  const int64_t cols = p.draft_cols, total = p.batch * cols;
  const int64_t step = next_probe_step(*p.probe_step);
  if (threadIdx.x == 0) prefill = 0;
  __syncthreads();
  int mine = 0;
  for (int64_t b = threadIdx.x; b < p.batch; b += blockDim.x) {
    slot_worth(p.acceptance + b * cols, p.worth + b * cols, cols, b, slot_probes(b, step, p.probe_interval),
               p.rates[kPrior], p.probe_interval > 0);
    mine += slot_prefills(p.seq_lens_encoder[b], p.stop_flags[b], p.is_block_step[b]) ? 1 : 0;
  }
  if (mine) atomicAdd(&prefill, mine);
  __syncthreads();  // every worth written, every thread past its read of probe_step
  if (threadIdx.x == 0) *p.probe_step = step;
  // Each thread ranks candidate e = base + threadIdx.x against every candidate, read in tiles of
  // blockDim.x through shared memory (every thread reads the same tile entry: a broadcast).
  for (int64_t base = 0; base < total; base += blockDim.x) {
    const int64_t e = base + threadIdx.x;
    const float w = e < total ? p.worth[e] : 0.0f;
    int64_t rank = 0;
    for (int64_t start = 0; start < total; start += blockDim.x) {
      __syncthreads();  // the previous tile is read by every thread
      if (start + threadIdx.x < total) tile[threadIdx.x] = p.worth[start + threadIdx.x];
      __syncthreads();
      const int64_t n = min64(blockDim.x, total - start);
      for (int64_t i = 0; i < n; ++i) rank += ranks_before(tile[i], start + i, w, e) ? 1 : 0;
    }
    if (e < total) p.ranking[rank] = static_cast<int32_t>(e);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    PlanScan scan;
    scan.prefill = static_cast<float>(prefill);
    for (int64_t rank = 0; rank < total; ++rank) {
      const int64_t index = p.ranking[rank];
      const int64_t cost = scan.add(p.worth[index], candidate_rows(index, cols, p.found[index / cols]), p.cost_len);
      scan.rate(p.step_cost[cost], rank);
    }
    threshold = p.worth[p.ranking[scan.best]];
  }
  __syncthreads();
  for (int64_t b = threadIdx.x; b < p.batch; b += blockDim.x) {
    p.draft_token_num[b] = slot_drafts(p.worth + b * cols, cols, threshold);
  }
}

__global__ void __launch_bounds__(kObserveThreads) observe_kernel(AdaptiveObserveParams p) {
  const int64_t b = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b < p.batch) observe_slot(p, b);
}

}  // namespace

cudaError_t adaptive_plan_cuda(const AdaptivePlanParams& params, cudaStream_t stream) {
  if (params.batch < 1 || params.batch > kMaxCudaBatch || params.draft_cols < 2 || params.cost_len < 1 ||
      params.batch * params.draft_cols > 0x7fffffff) {
    return cudaErrorInvalidValue;
  }
  const int64_t warps = (params.batch * params.draft_cols + 31) / 32;
  const int threads = static_cast<int>(min64(warps * 32, kMaxThreads));
  FS_CUDA_LAUNCH(plan_kernel, 1, threads, 0, stream, params);
  return cudaGetLastError();
}

cudaError_t adaptive_observe_cuda(const AdaptiveObserveParams& params, cudaStream_t stream) {
  if (params.batch < 1 || params.batch > kMaxCudaBatch || params.draft_cols < 2) return cudaErrorInvalidValue;
  const int blocks = static_cast<int>((params.batch + kObserveThreads - 1) / kObserveThreads);
  FS_CUDA_LAUNCH(observe_kernel, blocks, kObserveThreads, 0, stream, params);
  return cudaGetLastError();
}

}  // namespace fastspec

// build_draft_tree and verify_draft_tree on CUDA: one thread per slot running
// the shared per-slot rule (draft_tree.h). Both ops read a few KB per slot,
// so one small launch is the whole cost.
#include "cuda_kernel.h"

#include "fastspec/draft_tree.h"

namespace fastspec {
namespace {

constexpr int kThreads = 128;

__global__ void __launch_bounds__(kThreads) build_tree_kernel(BuildDraftTreeParams a) {
  const int64_t b = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x;
  int16_t node_of[kMaxTreeCandidates];  // per-thread scratch (local memory)
  if (b < a.batch) build_tree_slot_in_memory(a, b, node_of);
}

__global__ void __launch_bounds__(kThreads) verify_tree_kernel(VerifyDraftTreeParams a) {
  const int64_t b = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x;
  if (b < a.batch) verify_tree_slot_with(a, b, TreeRowsInMemory{});
}

unsigned blocks_for(int64_t batch) { return static_cast<unsigned>((batch + kThreads - 1) / kThreads); }

}  // namespace

cudaError_t build_draft_tree_cuda(const BuildDraftTreeParams& params, cudaStream_t stream) {
  if (!build_tree_sizes_ok(params) || params.batch > kMaxCudaBatch) return cudaErrorInvalidValue;
  if (params.batch == 0) return cudaSuccess;
  FS_CUDA_LAUNCH(build_tree_kernel, blocks_for(params.batch), kThreads, 0, stream, params);
  return cudaGetLastError();
}

cudaError_t verify_draft_tree_cuda(const VerifyDraftTreeParams& params, cudaStream_t stream) {
  if (!verify_tree_sizes_ok(params) || params.batch > kMaxCudaBatch) return cudaErrorInvalidValue;
  if (params.batch == 0) return cudaSuccess;
  FS_CUDA_LAUNCH(verify_tree_kernel, blocks_for(params.batch), kThreads, 0, stream, params);
  return cudaGetLastError();
}

}  // namespace fastspec

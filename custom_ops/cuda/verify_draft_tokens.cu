// verify_draft_tokens on CUDA: one thread per slot running the shared
// per-slot rule. The op is launch-bound (a few hundred bytes per slot), so
// one small launch is the whole cost.
#include "cuda_kernel.h"

#include "fastspec/verify_draft_tokens.h"

namespace fastspec {
namespace {

constexpr int kThreads = 128;

__global__ void __launch_bounds__(kThreads) verify_kernel(VerifyDraftTokensParams a) {
  const int64_t b = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x;
  if (b < a.batch) verify_slot(a, b);
}

}  // namespace

cudaError_t verify_draft_tokens_cuda(const VerifyDraftTokensParams& params, cudaStream_t stream) {
  if (params.batch < 0 || params.batch > kMaxCudaBatch) return cudaErrorInvalidValue;
  if (!verify_strategy_ok(params.strategy)) return cudaErrorInvalidValue;
  if (params.batch == 0) return cudaSuccess;
  const unsigned blocks = static_cast<unsigned>((params.batch + kThreads - 1) / kThreads);
  FS_CUDA_LAUNCH(verify_kernel, blocks, kThreads, 0, stream, params);
  return cudaGetLastError();
}

}  // namespace fastspec

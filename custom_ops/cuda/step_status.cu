// step_status on CUDA: a thread per value of the [B, 2K + 8] status.
#include "cuda_kernel.h"

#include "fastspec/step_status.h"

namespace fastspec {
namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads) status_kernel(StepStatusParams p, int64_t cols) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < p.batch * cols) p.status[i] = status_value(p, i / cols, i % cols);
}

}  // namespace

cudaError_t step_status_cuda(const StepStatusParams& params, cudaStream_t stream) {
  const int64_t cols = status_cols(params.draft_cols);
  if (!step_status_sizes_ok(params) || params.batch > 0x7fffffff / cols) return cudaErrorInvalidValue;
  const unsigned blocks = static_cast<unsigned>((params.batch * cols + kThreads - 1) / kThreads);
  FS_CUDA_LAUNCH(status_kernel, blocks, kThreads, 0, stream, params, cols);
  return cudaGetLastError();
}

}  // namespace fastspec

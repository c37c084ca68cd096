// update_model_status on CUDA: a single block strides over the slots with the
// shared per-slot rule and ORs "still running" with __syncthreads_or, so
// has_running is written by the same launch (no memset, no atomics, no host
// synchronisation).
#include "cuda_kernel.h"

#include "fastspec/update_model_status.h"

namespace fastspec {
namespace {

constexpr int kMaxThreads = 1024;

__global__ void __launch_bounds__(kMaxThreads) update_kernel(UpdateModelStatusParams a) {
  int running = 0;
  for (int64_t b = threadIdx.x; b < a.batch; b += blockDim.x) running |= update_slot(a, b) ? 1 : 0;
  running = __syncthreads_or(running);
  if (threadIdx.x == 0) *a.has_running = running != 0;
}

}  // namespace

cudaError_t update_model_status_cuda(const UpdateModelStatusParams& params, cudaStream_t stream) {
  if (params.batch < 0 || params.batch > kMaxCudaBatch) return cudaErrorInvalidValue;
  // Even B == 0 launches: has_running must still be written (false).
  const int64_t warps = (params.batch + 31) / 32;
  const int threads = static_cast<int>(min64(max64(warps, 1) * 32, kMaxThreads));
  FS_CUDA_LAUNCH(update_kernel, 1, threads, 0, stream, params);
  return cudaGetLastError();
}

}  // namespace fastspec

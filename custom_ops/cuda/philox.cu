// rand64 on the device, element-wise: lets the GPU tests check the one
// Philox implementation against the known answers of docs/ops/conventions.md.
#include "cuda_kernel.h"

#include "fastspec/philox.h"

namespace fastspec {
namespace {

__global__ void rand64_kernel(const int64_t* seeds, const int64_t* positions, uint32_t stream_id, uint64_t* out,
                              int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = rand64(seeds[i], positions[i], stream_id);
}

}  // namespace

cudaError_t rand64_cuda(const int64_t* seeds, const int64_t* positions, uint32_t stream_id, uint64_t* out, int64_t n,
                        cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const int threads = 256;
  FS_CUDA_LAUNCH(rand64_kernel, static_cast<unsigned>((n + threads - 1) / threads), threads, 0, stream, seeds,
                 positions, stream_id, out, n);
  return cudaGetLastError();
}

}  // namespace fastspec

// pack_rows on CUDA: one block. Its threads take the slots (kinds, drafts, the
// record; each slot's rows in record[b][0]), one thread adds the prefix sums, then
// the threads take the output rows (a binary search of the sums each).
#include "cuda_kernel.h"

#include "fastspec/pack_rows.h"

namespace fastspec {
namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads) pack_rows_kernel(PackRowsParams p) {
  const int64_t k = p.draft_cols - 1;
  for (int64_t b = threadIdx.x; b < p.batch; b += blockDim.x) pack_slot(p, b);
  __syncthreads();  // every slot's rows written
  if (threadIdx.x == 0) {
    int32_t cu = 0;
    p.cu_seqlens_q_output[0] = 0;
    for (int64_t b = 0; b < p.batch; ++b) {
      cu = add_rows_sat(cu, static_cast<int32_t>(p.step_record[b * (k + 2)]));
      p.cu_seqlens_q_output[b + 1] = cu;
    }
  }
  __syncthreads();  // the prefix sums written
  for (int64_t r = threadIdx.x; r < p.rows; r += blockDim.x) {
    p.batch_id_per_token_output[r] = row_slot(p.cu_seqlens_q_output, p.batch, r);
  }
}

}  // namespace

cudaError_t pack_rows_cuda(const PackRowsParams& params, cudaStream_t stream) {
  if (!pack_rows_sizes_ok(params)) return cudaErrorInvalidValue;
  FS_CUDA_LAUNCH(pack_rows_kernel, 1, kThreads, 0, stream, params);
  return cudaGetLastError();
}

}  // namespace fastspec

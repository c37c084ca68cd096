// model_inputs on CUDA: a block per (slot, span of kThreads columns) writes the
// slot's grid entries (thread 0 of the first span also its length), then a thread
// per output row writes its position.
#include "cuda_kernel.h"

#include "fastspec/model_inputs.h"

namespace fastspec {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxSpans = 65535;  // gridDim.y's limit; longer rows loop

__global__ void __launch_bounds__(kThreads) grid_kernel(ModelInputsParams p) {
  const int64_t b = blockIdx.x;
  const int64_t rows = slot_rows(p, b), start = slot_start(p, b);
  const int64_t* committed = p.token_ids_all + b * p.max_model_len;
  const int64_t* drafts = p.draft_tokens + b * p.draft_cols;
  int64_t* out = p.tokens + b * p.max_model_len;
  const int64_t stride = static_cast<int64_t>(gridDim.y) * blockDim.x;
  for (int64_t c = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x; c < p.max_model_len; c += stride) {
    out[c] = grid_token(p, b, c, start, rows, drafts, committed[c]);
  }
  if (blockIdx.y == 0 && threadIdx.x == 0) p.lengths[b] = slot_length(p, b);
}

__global__ void __launch_bounds__(kThreads) position_kernel(ModelInputsParams p) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r < p.rows) p.row_pos[r] = row_position(p, r);
}

}  // namespace

cudaError_t model_inputs_cuda(const ModelInputsParams& params, cudaStream_t stream) {
  if (!model_inputs_sizes_ok(params) || params.batch > 0x7fffffff || params.rows > (int64_t{1} << 40)) {
    return cudaErrorInvalidValue;
  }
  const dim3 grid(static_cast<unsigned>(params.batch),
                  static_cast<unsigned>(min64((params.max_model_len + kThreads - 1) / kThreads, kMaxSpans)));
  FS_CUDA_LAUNCH(grid_kernel, grid, kThreads, 0, stream, params);
  if (params.rows > 0) {
    const unsigned blocks = static_cast<unsigned>((params.rows + kThreads - 1) / kThreads);
    FS_CUDA_LAUNCH(position_kernel, blocks, kThreads, 0, stream, params);
  }
  return cudaGetLastError();
}

}  // namespace fastspec

// apply_token_bitmask on CUDA: blockIdx.x is the logits row, blockIdx.y a span
// of its vocabulary; thread i of a warp takes token 32 w + i, so a warp reads
// one mask word (a broadcast) and writes 32 neighbouring entries. Kept entries
// are never written; a row without a mask returns at once.
#include "cuda_kernel.h"

#include "fastspec/apply_token_bitmask.h"

namespace fastspec {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxSpans = 65535;  // gridDim.y's limit; wider rows loop

template <typename Elem>
__global__ void __launch_bounds__(kThreads) mask_kernel(ApplyTokenBitmaskParams p, Elem neg_inf) {
  const int64_t t = blockIdx.x;
  const int64_t m = bitmask_row(p.bitmask_index, t, p.mask_rows);
  if (m < 0) return;
  const int32_t* words = p.token_bitmask + m * p.mask_words;
  Elem* row = static_cast<Elem*>(p.logits) + t * p.vocab;
  const int64_t stride = static_cast<int64_t>(gridDim.y) * blockDim.x;
  for (int64_t v = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x; v < p.vocab; v += stride) {
    if (!token_allowed(words, p.mask_words, v)) row[v] = neg_inf;
  }
}

}  // namespace

cudaError_t apply_token_bitmask_cuda(const ApplyTokenBitmaskParams& params, cudaStream_t stream) {
  if (!bitmask_sizes_ok(params) || params.rows > 0x7fffffff) return cudaErrorInvalidValue;
  if (params.rows == 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>(params.rows),
                  static_cast<unsigned>(min64((params.vocab + kThreads - 1) / kThreads, kMaxSpans)));
  if (params.logits_dtype == kProbF32) {
    FS_CUDA_LAUNCH(mask_kernel<uint32_t>, grid, kThreads, 0, stream, params, kNegInfF32);
  } else {
    const uint16_t neg_inf = params.logits_dtype == kProbF16 ? kNegInfF16 : kNegInfBF16;
    FS_CUDA_LAUNCH(mask_kernel<uint16_t>, grid, kThreads, 0, stream, params, neg_inf);
  }
  return cudaGetLastError();
}

}  // namespace fastspec

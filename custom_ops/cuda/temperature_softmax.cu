// temperature_softmax on CUDA: a block of kSoftmaxLanes threads per row; thread j
// owns lane j (entries v = j, j + 256, ... in increasing order), so its running sum
// is the lane sum of temperature_softmax.h, and the block folds the lanes in
// shared memory in the header's order. Three sweeps of the row: the maximum (and
// a NaN flag), exp into probs and the lane sums, the scale by 1 / sum.
#include "cuda_kernel.h"

#include "fastspec/temperature_softmax.h"
#include "softmax_block.h"

namespace fastspec {
namespace {

constexpr int kThreads = kSoftmaxLanes;

__global__ void __launch_bounds__(kThreads) softmax_kernel(TemperatureSoftmaxParams p) {
  __shared__ float lanes[kThreads];
  __shared__ int nans[kThreads];
  const int j = threadIdx.x;
  const int64_t t = blockIdx.x;
  const float* x = p.logits + t * p.vocab;
  float* out = p.probs + t * p.vocab;
  const int32_t b = p.batch_id_per_token_output[t];
  bool valid = b >= 0 && b < p.batch;  // the same for every thread of the block
  float inv_t = 1.0f, m = 0.0f;
  if (valid) {
    inv_t = softmax_inverse_temperature(p.temperature[b]);
    const BlockRowMax raw = block_row_max(x, p.vocab, lanes, nans);
    m = mul_f32(raw.max, inv_t);
    valid = softmax_row_valid(m, raw.nan);
  }
  if (!valid) {
    for (int64_t v = j; v < p.vocab; v += kThreads) out[v] = 0.0f;
    return;
  }
  float sum = 0.0f;
  for (int64_t v = j; v < p.vocab; v += kThreads) {
    const float e = softmax_exp(sub_f32(mul_f32(x[v], inv_t), m));
    out[v] = e;
    sum = add_f32(sum, e);
  }
  lanes[j] = sum;
  __syncthreads();
  for (int w = kThreads / 2; w >= 1; w >>= 1) {
    if (j < w) lanes[j] = add_f32(lanes[j], lanes[j + w]);
    __syncthreads();
  }
  const float s = div_f32(1.0f, lanes[0]);
  for (int64_t v = j; v < p.vocab; v += kThreads) out[v] = mul_f32(out[v], s);
}

}  // namespace

cudaError_t temperature_softmax_cuda(const TemperatureSoftmaxParams& params, cudaStream_t stream) {
  if (!softmax_sizes_ok(params) || params.rows > 0x7fffffff) return cudaErrorInvalidValue;
  if (params.rows == 0) return cudaSuccess;
  FS_CUDA_LAUNCH(softmax_kernel, static_cast<unsigned>(params.rows), kThreads, 0, stream, params);
  return cudaGetLastError();
}

}  // namespace fastspec

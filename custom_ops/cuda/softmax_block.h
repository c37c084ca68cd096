// What temperature_softmax's and emitted_logprobs' CUDA kernels share: a block of
// kSoftmaxLanes threads finds its row's maximum and whether the row holds a NaN.
#pragma once

#include "fastspec/temperature_softmax.h"

namespace fastspec {

struct BlockRowMax {
  float max;
  bool nan;
};

// Thread i reads entries i, i + kSoftmaxLanes, ... of x[0, n); `values` and `flags` are
// kSoftmaxLanes entries of shared memory. Every thread gets the same answer, and the
// buffers are free again when it returns.
__device__ inline BlockRowMax block_row_max(const float* x, int64_t n, float* values, int* flags) {
  const int i = threadIdx.x;
  float mx = bits_to_f32(0xff800000u);  // -inf
  int nan = 0;
  for (int64_t v = i; v < n; v += kSoftmaxLanes) {
    const float a = x[v];
    nan |= is_nan_f32(a) ? 1 : 0;
    mx = a > mx ? a : mx;
  }
  values[i] = mx;
  flags[i] = nan;
  __syncthreads();
  for (int w = kSoftmaxLanes / 2; w >= 1; w >>= 1) {  // the maximum is exact in any order
    if (i < w) {
      values[i] = values[i + w] > values[i] ? values[i + w] : values[i];
      flags[i] |= flags[i + w];
    }
    __syncthreads();
  }
  const BlockRowMax result = {values[0], flags[0] != 0};
  __syncthreads();  // every thread has read the answer before the buffers are reused
  return result;
}

}  // namespace fastspec

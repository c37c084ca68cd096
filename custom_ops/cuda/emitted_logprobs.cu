// emitted_logprobs on CUDA: a block of kSoftmaxLanes threads per record (slot b,
// token j). Thread i owns lane i (entries v = i, i + 256, ... in increasing order),
// so its running sum is the lane sum of temperature_softmax.h and the block folds
// the lanes in shared memory in the header's order. The list is picked one entry
// at a time: each thread's best entry after the last one picked, then the block's.
#include "cuda_kernel.h"

#include "fastspec/emitted_logprobs.h"
#include "softmax_block.h"

namespace fastspec {
namespace {

constexpr int kThreads = kSoftmaxLanes;

__global__ void __launch_bounds__(kThreads) emitted_logprobs_kernel(EmittedLogprobsParams p) {
  __shared__ float values[kThreads];
  __shared__ int64_t ids[kThreads];
  __shared__ int nans[kThreads];
  const int i = threadIdx.x;
  const int64_t b = blockIdx.x / p.draft_cols, j = blockIdx.x % p.draft_cols;
  int64_t* record = record_of(p, b, j);
  int64_t row = 0, token = 0;
  if (!emitted_row(p, b, j, &row, &token)) {  // the same for every thread of the block
    for (int64_t c = i; c <= p.width; c += kThreads) record[c] = 0;
    return;
  }
  const float* x = p.logits + row * p.vocab;
  const float tau = logprobs_temperature(p.temperature[b]);
  const BlockRowMax raw = block_row_max(x, p.vocab, values, nans);
  const float m = div_f32(raw.max, tau);  // dividing by tau > 0 keeps the order
  const bool valid = softmax_row_valid(m, raw.nan);
  if (!valid) {
    if (i == 0) write_row_without_logprobs(p, record, token);
    return;
  }
  float sum = 0.0f;
  for (int64_t v = i; v < p.vocab; v += kThreads) sum = add_f32(sum, softmax_exp(sub_f32(div_f32(x[v], tau), m)));
  values[i] = sum;
  __syncthreads();
  for (int w = kThreads / 2; w >= 1; w >>= 1) {
    if (i < w) values[i] = add_f32(values[i], values[i + w]);
    __syncthreads();
  }
  const float log_sum = softmax_log(values[0]);
  if (i == 0) record[0] = logprob_key(logprob_of(div_f32(x[token], tau), m, log_sum), token);
  __syncthreads();
  const int64_t listed = listed_count(p);
  float last_s = bits_to_f32(0x7f800000u);  // +inf, id -1: before every entry
  int64_t last_id = -1;
  for (int64_t c = 0; c < listed; ++c) {
    float best_s = 0.0f;
    int64_t best_id = -1;  // none
    for (int64_t v = i; v < p.vocab; v += kThreads) {
      const float s = div_f32(x[v], tau);
      if (listed_before(last_s, last_id, s, v) && (best_id < 0 || listed_before(s, v, best_s, best_id))) {
        best_s = s;
        best_id = v;
      }
    }
    values[i] = best_s;
    ids[i] = best_id;
    __syncthreads();
    for (int w = kThreads / 2; w >= 1; w >>= 1) {
      if (i < w && ids[i + w] >= 0 && (ids[i] < 0 || listed_before(values[i + w], ids[i + w], values[i], ids[i]))) {
        values[i] = values[i + w];
        ids[i] = ids[i + w];
      }
      __syncthreads();
    }
    last_s = values[0];
    last_id = ids[0];
    if (i == 0) record[1 + c] = logprob_key(logprob_of(last_s, m, log_sum), last_id);
    __syncthreads();  // every thread has read the pick before the next round writes
  }
  for (int64_t c = listed + i; c < p.width; c += kThreads) record[1 + c] = 0;
}

}  // namespace

cudaError_t emitted_logprobs_cuda(const EmittedLogprobsParams& params, cudaStream_t stream) {
  if (!logprobs_sizes_ok(params) || params.batch * params.draft_cols > 0x7fffffff) return cudaErrorInvalidValue;
  FS_CUDA_LAUNCH(emitted_logprobs_kernel, static_cast<unsigned>(params.batch * params.draft_cols), kThreads, 0, stream,
                 params);
  return cudaGetLastError();
}

}  // namespace fastspec

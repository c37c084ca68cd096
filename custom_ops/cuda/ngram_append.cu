// ngram_append on CUDA: one block per slot; threads stride over candidate end
// positions and fold each candidate's key into one shared 64-bit minimum
// (longest, prompt first, leftmost). A single-block launch applies the budget.
#include "cuda_kernel.h"

#include "fastspec/ngram_append.h"

namespace fastspec {
namespace {

constexpr int kThreads = 256;

__device__ void scan(const NgramAppendSlot& slot, int generated, int64_t last_end, unsigned long long* best) {
  unsigned long long mine = kNoMatch;
  for (int64_t e = threadIdx.x; e <= last_end; e += kThreads) {
    const uint64_t key = ngram_append_key(slot, generated, e);
    if (key < mine) mine = key;  // a thread's later e cannot beat an equal-length earlier one
  }
  if (mine != kNoMatch) atomicMin(best, mine);
}

__global__ void __launch_bounds__(kThreads) ngram_append_kernel(NgramMatchParams a) {
  const int64_t b = blockIdx.x;
  const int32_t enc = a.seq_lens_encoder[b];
  const bool decode = is_decode(enc, a.seq_lens_decoder[b]);
  if (a.ngram_anchor && threadIdx.x == 0 && !decode) a.ngram_anchor[b] = -1;
  if (is_prefill(enc)) return;
  int64_t* drafts = a.draft_tokens + b * a.draft_cols;
  if (!decode) {
    for (int64_t k = 1 + threadIdx.x; k < a.draft_cols; k += kThreads) drafts[k] = -1;
    if (threadIdx.x == 0) a.seq_lens_this_time[b] = 0;
    return;
  }
  // Every thread reads seq_lens_this_time (the model's draft count) here;
  // thread 0 overwrites it only after the barriers below.
  const NgramAppendSlot slot = ngram_append_slot(a, b);
  __shared__ unsigned long long best;
  __shared__ int64_t anchor, count, from;
  if (threadIdx.x == 0) {
    best = kNoMatch;
    count = 0;  // read by ngram_append_finish even when no anchor is followed
    from = 0;
    anchor = -1;  // anchored drafting: a short serial check
    if (a.ngram_anchor && slot.room > 0) {
      anchor = ngram_append_anchored(RowRef{slot.prompt}, RowRef{slot.model}, slot, a.draft_cols, a.ngram_anchor[b],
                                     &count, &from);
    }
  }
  __syncthreads();
  if (slot.searchable && anchor < 0) {
    scan(slot, 0, slot.p - 2, &best);
    __syncthreads();
    const bool full = best != kNoMatch && ngram_key_length(best) == slot.max_len;
    __syncthreads();  // every thread has read `best` before the next scan updates it
    if (!full) scan(slot, 1, slot.s + slot.kept - 2, &best);
  }
  __syncthreads();
  if (threadIdx.x == 0) ngram_append_finish(a, b, slot, best, anchor, count, from);
}

}  // namespace

cudaError_t ngram_append_cuda(const NgramMatchParams& params, cudaStream_t stream) {
  return ngram_search_then_budget_cuda(ngram_append_kernel, kThreads, params, stream);
}

}  // namespace fastspec

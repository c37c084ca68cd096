// ngram_match on CUDA: one block per slot scans its regions in tiles
// (coalesced loads, several in flight per thread) and keeps the best match as
// one 64-bit key in shared memory; a second, single-block launch applies the
// token budget when one is set.
#include "cuda_kernel.h"

#include "fastspec/ngram_match.h"

namespace fastspec {
namespace {

constexpr int kThreads = 512;
constexpr int kItems = 8;  // loads in flight per thread and tile
constexpr int kBudgetThreads = 1024;

// Scans region[0 .. last_end] tile by tile, folding matches into *best.
// Returns once a full-length match is seen: the tile it lies in holds the
// leftmost one, so later tiles cannot improve on it.
__device__ void scan_region(const int64_t* region, int64_t last_end, const NgramSlot& slot, int is_generated,
                            unsigned long long* best) {
  const int64_t* newest = slot.generated + slot.s - 1;
  const int64_t last = *newest;
  for (int64_t base = 0; base <= last_end; base += kThreads * kItems) {
    int64_t v[kItems];
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const int64_t e = base + j * kThreads + threadIdx.x;
      v[j] = e <= last_end ? region[e] : ~last;
    }
    int full = 0;
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      if (v[j] != last) continue;
      const int64_t e = base + j * kThreads + threadIdx.x;
      const int32_t len = ngram_match_length(region, e, newest, slot.max_len);
      if (len < slot.min_len) continue;
      atomicMin(best, static_cast<unsigned long long>(ngram_match_key(len, is_generated, e)));
      full |= len == slot.max_len;
    }
    if (__syncthreads_or(full)) return;
  }
  __syncthreads();
}

__global__ void __launch_bounds__(kThreads) ngram_search_kernel(NgramMatchParams a) {
  const int64_t b = blockIdx.x;
  const int32_t enc = a.seq_lens_encoder[b];
  if (is_prefill(enc)) {
    if (a.ngram_anchor && threadIdx.x == 0) a.ngram_anchor[b] = -1;
    return;
  }
  const bool decode = is_decode(enc, a.seq_lens_decoder[b]);
  const NgramSlot slot = ngram_slot(a, b);

  __shared__ unsigned long long best;
  __shared__ int64_t count, anchor;
  __shared__ const int64_t* first;
  if (threadIdx.x == 0) {
    best = kNoMatch;
    anchor = -1;  // anchored drafting: a short serial check of at most (K + 1)^2 tokens
    if (a.ngram_anchor && decode && slot.valid) {
      anchor = ngram_anchored_drafts(RowRef{slot.prompt}, slot, a.draft_cols, a.ngram_anchor[b], &count);
    }
  }
  __syncthreads();
  const bool search = decode && slot.searchable && anchor < 0;
  if (search) {
    scan_region(slot.prompt, slot.p - 2, slot, 0, &best);
    const bool scan_generated = best == kNoMatch || ngram_key_length(best) < slot.max_len;
    __syncthreads();  // every thread has read `best` before the next scan updates it
    if (scan_generated) scan_region(slot.generated, slot.s - 2, slot, 1, &best);
  }
  if (threadIdx.x == 0) {
    // A local, not the shared `anchor`: other threads may still be reading it (no barrier when
    // `search` is false; compute-sanitizer's racecheck flagged the write).
    int64_t source = anchor;
    const int64_t* start = slot.prompt + (source >= 0 ? source : 0);
    if (source < 0) {
      count = search ? ngram_drafts_of(slot, best, &start) : 0;
      source = count > 0 ? start - slot.prompt : -1;  // the row position of the drafts' source
    }
    first = start;
    if (a.ngram_anchor) a.ngram_anchor[b] = source;
    a.seq_lens_this_time[b] = decode ? static_cast<int32_t>(1 + count) : 0;
  }
  __syncthreads();
  int64_t* drafts = a.draft_tokens + b * a.draft_cols;
  for (int64_t k = threadIdx.x; k + 1 < a.draft_cols; k += kThreads) {
    drafts[1 + k] = k < count ? first[k] : -1;
  }
}

__global__ void __launch_bounds__(kBudgetThreads) ngram_budget_kernel(NgramMatchParams a) {
  FS_DYNAMIC_SHARED(int32_t, shared);
  int32_t* this_time = shared;
  int32_t* encoder = shared + a.batch;
  int32_t* decoder = shared + 2 * a.batch;
  for (int64_t b = threadIdx.x; b < a.batch; b += kBudgetThreads) {
    this_time[b] = a.seq_lens_this_time[b];
    encoder[b] = a.seq_lens_encoder[b];
    decoder[b] = a.seq_lens_decoder[b];
  }
  __syncthreads();
  if (threadIdx.x == 0) ngram_apply_budget(a, this_time, encoder, decoder);
  __syncthreads();
  for (int64_t b = threadIdx.x; b < a.batch; b += kBudgetThreads) {
    if (!is_decode(encoder[b], decoder[b])) continue;
    a.seq_lens_this_time[b] = this_time[b];
    int64_t* drafts = a.draft_tokens + b * a.draft_cols;
    for (int64_t k = this_time[b]; k < a.draft_cols; ++k) drafts[k] = -1;
  }
}

}  // namespace

cudaError_t ngram_search_then_budget_cuda(void (*search)(NgramMatchParams), int threads, const NgramMatchParams& params,
                                          cudaStream_t stream) {
  if (params.batch < 0 || params.batch > kMaxCudaBatch) return cudaErrorInvalidValue;
  if (params.batch == 0) return cudaSuccess;
  FS_CUDA_LAUNCH(search, static_cast<unsigned>(params.batch), threads, 0, stream, params);
  if (params.token_budget > 0) {
    const size_t shared_bytes = 3 * sizeof(int32_t) * static_cast<size_t>(params.batch);
    FS_CUDA_LAUNCH(ngram_budget_kernel, 1, kBudgetThreads, shared_bytes, stream, params);
  }
  return cudaGetLastError();
}

cudaError_t ngram_match_cuda(const NgramMatchParams& params, cudaStream_t stream) {
  return ngram_search_then_budget_cuda(ngram_search_kernel, kThreads, params, stream);
}

}  // namespace fastspec

// process_logits on CUDA: one block per output row. The block walks the row's
// history (committed tokens, then the node's path, which thread 0 lays out in
// shared memory) a position per thread; a position owns its token when no
// earlier position holds it, and counts the token's output occurrences, both
// read against the history in shared tiles. Each owner rewrites its token's
// logit alone, so no two threads touch one logit. Thread 0 then adds the bias
// entries in column order and sets the bans. O(H^2 / threads) comparisons per
// row for a history of H tokens: no scratch memory and no allocation.
#include "cuda_kernel.h"

#include "fastspec/process_logits.h"

namespace fastspec {
namespace {

constexpr int kThreads = 256;
constexpr int kTile = 1024;

struct RowHistory {
  const int64_t* committed;    // token_ids_all's row
  const int64_t* path_tokens;  // the node's path (shared memory)
  int64_t committed_end;

  __device__ int64_t operator()(int64_t i) const {
    return i < committed_end ? committed[i] : path_tokens[i - committed_end];
  }
};

__device__ void ban(float* row, int64_t token, int64_t vocab) {
  if (in_vocab(token, vocab)) row[token] = negative_infinity_f32();
}

__global__ void __launch_bounds__(kThreads) process_logits_kernel(ProcessLogitsParams p) {
  __shared__ int64_t tile[kTile];
  __shared__ int64_t path_tokens[kMaxLogitsPath];
  __shared__ int32_t path[kMaxLogitsPath];
  __shared__ int64_t shared_path_len;
  const int64_t t = blockIdx.x;
  const int32_t slot = p.batch_id_per_token_output[t];
  if (slot < 0 || slot >= p.batch) return;  // a padding row: the whole block leaves
  const int64_t b = slot, vocab = p.vocab, cols = p.draft_cols;
  const float repetition = p.repetition_penalty[b], presence = p.presence_penalty[b];
  const float frequency = p.frequency_penalty[b];
  const LogitsHistory h = logits_history(p.prompt_lens[b], p.step_idx[b], p.max_model_len);
  const int64_t* drafts = p.draft_tokens + b * cols;
  float* row = p.logits + t * vocab;
  if (threadIdx.x == 0) {
    const int32_t* parents = p.draft_parents ? p.draft_parents + b * cols : nullptr;
    shared_path_len = logits_path(parents, logits_row_node(t, p.cu_seqlens_q_output[b], cols), path);
    for (int64_t i = 0; i < shared_path_len; ++i) path_tokens[i] = drafts[path[i]];
  }
  __syncthreads();
  const int64_t path_len = shared_path_len;
  const RowHistory history{p.token_ids_all + b * p.max_model_len, path_tokens, h.output_end};
  const int64_t n = h.output_end + path_len;

  if (penalties_on(repetition, presence, frequency)) {
    for (int64_t base = 0; base < n; base += kThreads) {
      const int64_t i = base + threadIdx.x;
      const int64_t mine = i < n ? history(i) : -1;
      bool owner = in_vocab(mine, vocab);
      int64_t count = 0;
      for (int64_t start = 0; start < n; start += kTile) {
        const int64_t m = min64(kTile, n - start);
        __syncthreads();  // the previous tile is read
        for (int64_t k = threadIdx.x; k < m; k += kThreads) tile[k] = history(start + k);
        __syncthreads();
        for (int64_t k = 0; owner && k < m; ++k) {
          if (tile[k] != mine) continue;
          if (start + k < i)
            owner = false;  // an earlier position owns it
          else if (start + k >= h.prompt_end)
            ++count;
        }
      }
      if (owner) row[mine] = penalized_logit(row[mine], count, repetition, presence, frequency);
    }
    __syncthreads();  // every penalty written before the bias adds to it
  }
  if (threadIdx.x != 0) return;
  const int64_t* bias_ids = p.logit_bias_ids + b * p.bias_cols;
  const float* bias_values = p.logit_bias_values + b * p.bias_cols;
  for (int64_t k = 0; k < p.bias_cols; ++k) {
    if (in_vocab(bias_ids[k], vocab)) row[bias_ids[k]] = add_f32(row[bias_ids[k]], bias_values[k]);
  }
  const auto from_end = [&history, n](int64_t k) { return history(n - 1 - k); };
  const int64_t available = n - h.prompt_end;
  const int64_t* words = p.bad_words + b * p.bad_words_cols;
  const auto entry = [words](int64_t i) { return words[i]; };
  for (int64_t e = 0; e < p.bad_words_cols; ++e) {
    if (bad_word_bans(entry, e, p.bad_words_cols, available, from_end)) ban(row, words[e], vocab);
  }
  if (logits_tokens_out(h.out, path_len) < p.min_tokens[b]) {
    for (int64_t e = 0; e < p.num_end_tokens; ++e) ban(row, p.end_tokens[e], vocab);
    for (int64_t s = 0; s < p.stop_cols; ++s) ban(row, p.stop_token_ids[b * p.stop_cols + s], vocab);
  }
}

}  // namespace

cudaError_t process_logits_cuda(const ProcessLogitsParams& params, cudaStream_t stream) {
  if (params.rows < 0 || params.rows > 0x7fffffff || params.draft_cols < 1 || params.draft_cols > kMaxLogitsPath) {
    return cudaErrorInvalidValue;
  }
  if (params.rows == 0) return cudaSuccess;
  FS_CUDA_LAUNCH(process_logits_kernel, static_cast<unsigned>(params.rows), kThreads, 0, stream, params);
  return cudaGetLastError();
}

}  // namespace fastspec

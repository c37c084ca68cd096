// ngram_match: parameters, the per-slot rules shared by every backend, and
// the launcher declarations. Semantics: SPEC.md "ngram_match".
//
// Both backends run the same two passes:
//   1. search (parallel over slots): per decode slot, find the best match and
//      write the unbudgeted drafts and seq_lens_this_time = 1 + drafts;
//      inactive slots are cleared, prefill slots untouched;
//   2. budget (only when token_budget > 0, sequential over slots): trim the
//      drafts of decode slots so the step fits the budget.
#pragma once

#include <cstdint>

#include "fastspec/common.h"

namespace fastspec {

struct NgramMatchParams {
  const int64_t* token_ids_all;       // [B, L]
  const int64_t* prompt_lens;         // [B]
  const int64_t* step_idx;            // [B]
  const int32_t* draft_token_num;     // [B]
  int64_t* draft_tokens;              // [B, K + 1], in place
  int32_t* seq_lens_this_time;        // [B], in place
  const int32_t* seq_lens_encoder;    // [B]
  const int32_t* seq_lens_decoder;    // [B]
  const int64_t* max_dec_len;         // [B]
  int64_t batch;                      // B
  int64_t max_model_len;              // L
  int64_t draft_cols;                 // K + 1
  int32_t max_ngram_size;
  int32_t min_ngram_size;
  int64_t token_budget;               // <= 0: unlimited
};

// A match ends at position e of a region (prompt or generated tokens) whose
// token equals the newest generated token. Its length is how far the region,
// read backwards from e, agrees with the generated tokens read backwards from
// the newest one, capped at max_len and never before the region's start.
FS_HD int32_t ngram_match_length(const int64_t* region, int64_t e, const int64_t* newest,
                                 int32_t max_len) {
  int32_t m = 1;
  while (m < max_len && e - m >= 0 && region[e - m] == newest[-m]) ++m;
  return m;
}

// Rank of a match: longer first, then prompt before generated, then leftmost.
// Smaller is better; kNoMatch loses to every match. L < 2^31 is checked on the
// host, so e and the length each fit 31 bits.
constexpr uint64_t kNoMatch = ~0ull;
FS_HD uint64_t ngram_match_key(int32_t len, int region_is_generated, int64_t e) {
  return (static_cast<uint64_t>(0x7fffffff - len) << 32) |
         (static_cast<uint64_t>(region_is_generated) << 31) | static_cast<uint64_t>(e);
}
FS_HD int32_t ngram_key_length(uint64_t key) {
  return 0x7fffffff - static_cast<int32_t>(key >> 32);
}
FS_HD int ngram_key_is_generated(uint64_t key) { return static_cast<int>((key >> 31) & 1u); }
FS_HD int64_t ngram_key_end(uint64_t key) { return static_cast<int64_t>(key & 0x7fffffffu); }

// What the search of one decode slot works on. valid == false: no drafts.
struct NgramSlot {
  bool valid;
  const int64_t* prompt;     // P = token_ids_all[b, 0:p]
  const int64_t* generated;  // G = token_ids_all[b, p:p+s]
  int64_t p, s;
  int64_t max_drafts;        // md
  int32_t max_len;           // min(max_ngram_size, s): longest query
  int32_t min_len;           // min_ngram_size
};

FS_HD NgramSlot ngram_slot(const NgramMatchParams& a, int64_t b) {
  NgramSlot slot{};
  const int64_t p = a.prompt_lens[b];
  const int64_t s = a.step_idx[b];
  slot.valid = false;
  if (p < 0 || s < 0 || p > a.max_model_len || s > a.max_model_len - p) return slot;
  const int64_t md = min64(min64(static_cast<int64_t>(a.draft_token_num[b]), a.draft_cols - 1),
                           a.max_dec_len[b] - s - 1);
  const int64_t max_len = min64(static_cast<int64_t>(a.max_ngram_size), s);
  if (md <= 0 || max_len < a.min_ngram_size) return slot;
  slot.valid = true;
  slot.prompt = a.token_ids_all + b * a.max_model_len;
  slot.generated = slot.prompt + p;
  slot.p = p;
  slot.s = s;
  slot.max_drafts = md;
  slot.max_len = static_cast<int32_t>(max_len);
  slot.min_len = a.min_ngram_size;
  return slot;
}

// Number of drafts the best key yields, and where they start.
FS_HD int64_t ngram_drafts_of(const NgramSlot& slot, uint64_t key, const int64_t** first) {
  if (key == kNoMatch) return 0;
  const bool gen = ngram_key_is_generated(key);
  const int64_t start = ngram_key_end(key) + 1;
  const int64_t end = gen ? slot.s : slot.p;
  *first = (gen ? slot.generated : slot.prompt) + start;
  return min64(slot.max_drafts, end - start);
}

// Pass 2, sequential over slots: the budget rule of SPEC.md. `kept` receives
// the final seq_lens_this_time of every decode slot (others: unchanged).
// Works in place on seq_lens_this_time, which pass 1 set to 1 + drafts.
FS_HD void ngram_apply_budget(const NgramMatchParams& a, int32_t* seq_lens_this_time,
                              const int32_t* seq_lens_encoder, const int32_t* seq_lens_decoder) {
  int64_t running = 0;
  for (int64_t b = 0; b < a.batch; ++b) {
    running += is_prefill(seq_lens_encoder[b]) || is_decode(seq_lens_encoder[b], seq_lens_decoder[b]);
  }
  int64_t used = 0, seen = 0;
  for (int64_t b = 0; b < a.batch; ++b) {
    if (is_decode(seq_lens_encoder[b], seq_lens_decoder[b])) {
      const int64_t reserve = running - seen - 1;
      const int64_t allowed = max64(0, a.token_budget - used - reserve - 1);
      const int64_t drafts = min64(seq_lens_this_time[b] - 1, allowed);
      seq_lens_this_time[b] = static_cast<int32_t>(1 + drafts);
    } else if (!is_prefill(seq_lens_encoder[b])) {
      continue;
    }
    used += seq_lens_this_time[b];
    ++seen;
  }
}

// CPU: both passes, threads across slots. Returns kOk.
int ngram_match_cpu(const NgramMatchParams& params);

// The CPU driver both n-gram ops share: search_slot on every slot (threaded
// when the call has enough tokens to scan), then the budget pass and its trim.
void ngram_run_cpu(const NgramMatchParams& params,
                   void (*search_slot)(const NgramMatchParams&, int64_t));

#if defined(FASTSPEC_WITH_CUDA)
// CUDA: one search launch, plus one budget launch when token_budget > 0.
// No allocation, no host synchronisation: safe inside CUDA Graph capture.
cudaError_t ngram_match_cuda(const NgramMatchParams& params, cudaStream_t stream);

// The budget pass alone (one single-block launch), shared by both n-gram ops.
void ngram_budget_cuda(const NgramMatchParams& params, cudaStream_t stream);
#endif

}  // namespace fastspec

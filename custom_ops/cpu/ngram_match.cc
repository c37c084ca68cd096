// ngram_match on the CPU: threads across slots; within a slot one
// left-to-right pass over each region that compares the newest token first
// (SIMD) and extends backwards only at candidates, so every n-gram size is
// served by the same pass.
#include "fastspec/ngram_match.h"
#include "fastspec/parallel.h"
#include "find_token.h"

#include <cstdint>

namespace fastspec {
namespace {

// Best match ending in region[0 .. last_end], improving on `best` only with a
// strictly longer one (the scan goes left to right, so ties keep the leftmost).
inline uint64_t scan_region(const int64_t* region, int64_t last_end, const NgramSlot& slot, int is_generated,
                            uint64_t best) {
  const FindTokenFn find_token = find_token_fn();
  const int64_t* newest = slot.generated + slot.s - 1;
  int32_t best_len = best == kNoMatch ? slot.min_len - 1 : ngram_key_length(best);
  for (int64_t e = find_token(region, 0, last_end + 1, *newest); e <= last_end;
       e = find_token(region, e + 1, last_end + 1, *newest)) {
    const int32_t len = ngram_match_length(region, e, newest, slot.max_len);
    if (len > best_len) {
      best_len = len;
      best = ngram_match_key(len, is_generated, e);
      if (len == slot.max_len) break;  // nothing later can be longer
    }
  }
  return best;
}

void search_slot(const NgramMatchParams& a, int64_t b) {
  int64_t* drafts = a.draft_tokens + b * a.draft_cols;
  const int32_t enc = a.seq_lens_encoder[b];
  int64_t count = 0, anchor = -1;
  const bool decode = is_decode(enc, a.seq_lens_decoder[b]);
  const NgramSlot slot = ngram_slot(a, b);
  if (!is_prefill(enc) && decode && slot.valid) {
    const int64_t* first = nullptr;
    if (a.ngram_anchor) anchor = a.ngram_anchor[b];
    count = ngram_slot_drafts_cpu(slot, a.draft_cols, a.ngram_anchor ? &anchor : nullptr, &first);
    for (int64_t k = 0; k < count; ++k) drafts[1 + k] = first[k];
  }
  if (a.ngram_anchor) a.ngram_anchor[b] = anchor;  // -1 for prefill, inactive and draftless slots
  if (is_prefill(enc)) return;
  for (int64_t k = 1 + count; k < a.draft_cols; ++k) drafts[k] = -1;
  a.seq_lens_this_time[b] = decode ? static_cast<int32_t>(1 + count) : 0;
}

// Below this many tokens to search, a thread team costs more than it saves.
constexpr int64_t kParallelTokens = 1 << 16;

}  // namespace

int64_t ngram_slot_drafts_cpu(const NgramSlot& slot, int64_t draft_cols, int64_t* anchor, const int64_t** first) {
  int64_t count = 0, at = -1;
  if (anchor) at = ngram_anchored_drafts(RowRef{slot.prompt}, slot, draft_cols, *anchor, &count);
  if (at >= 0) {
    *first = slot.prompt + at;
  } else if (slot.searchable) {
    uint64_t best = scan_region(slot.prompt, slot.p - 2, slot, 0, kNoMatch);
    if (best == kNoMatch || ngram_key_length(best) < slot.max_len) {
      best = scan_region(slot.generated, slot.s - 2, slot, 1, best);
    }
    count = ngram_drafts_of(slot, best, first);
    at = count > 0 ? *first - slot.prompt : -1;  // the row position of the drafts' source
  }
  if (anchor) *anchor = at;
  return count;
}

void ngram_run_cpu(const NgramMatchParams& a, void (*search_slot)(const NgramMatchParams&, int64_t)) {
  int64_t tokens = 0;
  for (int64_t b = 0; b < a.batch; ++b) {
    // each term clamped to [0, L] first, so the sum cannot overflow whatever the per-slot values
    tokens +=
        min64(min64(max64(a.prompt_lens[b], 0), a.max_model_len) + min64(max64(a.step_idx[b], 0), a.max_model_len),
              a.max_model_len);
  }
  const auto search = [&a, search_slot](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) search_slot(a, b);
  };
  if (tokens >= kParallelTokens) {
    parallel_for(a.batch, max64(1, a.batch / (8 * num_threads())), search);
  } else {
    search(0, a.batch);
  }

  if (a.token_budget > 0) {
    ngram_apply_budget(a, a.seq_lens_this_time, a.seq_lens_encoder, a.seq_lens_decoder);
    for (int64_t b = 0; b < a.batch; ++b) {
      if (!is_decode(a.seq_lens_encoder[b], a.seq_lens_decoder[b])) continue;
      int64_t* drafts = a.draft_tokens + b * a.draft_cols;
      for (int64_t k = a.seq_lens_this_time[b]; k < a.draft_cols; ++k) drafts[k] = -1;
    }
  }
}

int ngram_match_cpu(const NgramMatchParams& a) {
  ngram_run_cpu(a, search_slot);
  return kOk;
}

}  // namespace fastspec

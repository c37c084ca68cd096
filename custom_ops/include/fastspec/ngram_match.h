// ngram_match: parameters, the per-slot rules shared by every backend, and
// the launcher declarations. Semantics: docs/ops/ngram_match.md.
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
  int64_t* ngram_anchor;              // [B] in place, or nullptr: anchored drafting (below)
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
FS_HD int32_t ngram_match_length(const int64_t* region, int64_t e, const int64_t* newest, int32_t max_len) {
  int32_t m = 1;
  while (m < max_len && e - m >= 0 && region[e - m] == newest[-m]) ++m;
  return m;
}

// Rank of a match: longer first, then prompt before generated, then leftmost.
// Smaller is better; kNoMatch loses to every match. L < 2^31 is checked on the
// host, so e and the length each fit 31 bits.
constexpr uint64_t kNoMatch = ~0ull;
FS_HD uint64_t ngram_match_key(int32_t len, int region_is_generated, int64_t e) {
  return (static_cast<uint64_t>(0x7fffffff - len) << 32) | (static_cast<uint64_t>(region_is_generated) << 31) |
         static_cast<uint64_t>(e);
}
FS_HD int32_t ngram_key_length(uint64_t key) { return 0x7fffffff - static_cast<int32_t>(key >> 32); }
FS_HD int ngram_key_is_generated(uint64_t key) { return static_cast<int>((key >> 31) & 1u); }
FS_HD int64_t ngram_key_end(uint64_t key) { return static_cast<int64_t>(key & 0x7fffffffu); }

// The geometry of one decode slot, from its values alone (the XPU kernels
// stage them in local memory). valid == false: no drafts. searchable: valid
// and a query length exists (anchored drafting needs only valid).
struct NgramGeometry {
  bool valid, searchable;
  int64_t p, s;              // |prompt|, |generated|
  int64_t max_drafts;        // md
  int32_t max_len;           // min(max_ngram_size, s): longest query
  int32_t min_len;           // min_ngram_size
};

FS_HD NgramGeometry ngram_geometry(int64_t p, int64_t s, int32_t draft_token_num, int64_t max_dec_len,
                                   int64_t draft_cols, int64_t max_model_len, int32_t max_ngram_size,
                                   int32_t min_ngram_size) {
  NgramGeometry g{};
  g.valid = g.searchable = false;
  if (p < 0 || s < 0 || p > max_model_len || s > max_model_len - p) return g;
  // max_dec_len - s - 1 may leave the int64 range (max_dec_len near INT64_MIN): saturate.
  const int64_t md =
      min64(min64(static_cast<int64_t>(draft_token_num), draft_cols - 1), sub_sat64(sub_sat64(max_dec_len, s), 1));
  const int64_t max_len = min64(static_cast<int64_t>(max_ngram_size), s);
  if (md <= 0) return g;
  g.valid = true;
  g.searchable = max_len >= min_ngram_size;
  g.p = p;
  g.s = s;
  g.max_drafts = md;
  g.max_len = static_cast<int32_t>(max_len);
  g.min_len = min_ngram_size;
  return g;
}

// The drafts the best key yields: how many, from which region and where they
// start in it (start is meaningless when the count is 0).
FS_HD int64_t ngram_draft_span(const NgramGeometry& g, uint64_t key, int* from_generated, int64_t* start) {
  if (!g.searchable || key == kNoMatch) return 0;
  *from_generated = ngram_key_is_generated(key);
  *start = ngram_key_end(key) + 1;
  return min64(g.max_drafts, (*from_generated ? g.s : g.p) - *start);
}

// What the search of one decode slot works on: its geometry and its rows.
struct NgramSlot : NgramGeometry {
  const int64_t* prompt;     // P = token_ids_all[b, 0:p]
  const int64_t* generated;  // G = token_ids_all[b, p:p+s]
};

FS_HD NgramSlot ngram_slot(const NgramMatchParams& a, int64_t b) {
  NgramSlot slot{};
  static_cast<NgramGeometry&>(slot) =
      ngram_geometry(a.prompt_lens[b], a.step_idx[b], a.draft_token_num[b], a.max_dec_len[b], a.draft_cols,
                     a.max_model_len, a.max_ngram_size, a.min_ngram_size);
  if (!slot.valid) return slot;
  slot.prompt = a.token_ids_all + b * a.max_model_len;
  slot.generated = slot.prompt + slot.p;
  return slot;
}

// ---- anchored drafting (docs/ops/ngram_match.md "Anchored drafting") --------
// The anchor is the row position the slot's draft column 1 was copied from.
// Rules read the row through a Row functor (a pointer here; global memory on
// the XPU) and only at positions in [0, p + s).

struct RowRef {
  const int64_t* tokens;
  FS_HD int64_t operator()(int64_t i) const { return tokens[i]; }
};

// Where the source at `anchor` continues: the largest m in [1, min(K + 1, s)]
// with anchor + m < end and row[anchor, anchor + m) == row[p + s - m, p + s)
// gives anchor + m; -1 when none does. *end: the source region's end (p for a
// prompt source, p + s otherwise). Needs a valid geometry (0 <= p, s; p + s <= L).
template <class Row>
FS_HD int64_t ngram_anchor_continuation(const Row& row, int64_t p, int64_t s, int64_t k, int64_t anchor, int64_t* end) {
  const int64_t known = p + s;
  if (anchor < 0 || anchor >= known) return -1;
  *end = anchor < p ? p : known;
  for (int64_t m = min64(k + 1, s); m >= 1; --m) {
    if (anchor + m >= *end) continue;
    bool same = true;
    for (int64_t i = 0; i < m && same; ++i) same = row(anchor + i) == row(known - m + i);
    if (same) return anchor + m;
  }
  return -1;
}

// ngram_match's anchored drafts: their row position (the new anchor) and
// count, or -1 when the search must run. Needs g.valid (not g.searchable).
template <class Row>
FS_HD int64_t ngram_anchored_drafts(const Row& row, const NgramGeometry& g, int64_t draft_cols, int64_t anchor,
                                    int64_t* count) {
  int64_t end = 0;
  const int64_t start = ngram_anchor_continuation(row, g.p, g.s, draft_cols - 1, anchor, &end);
  if (start >= 0) *count = min64(g.max_drafts, end - start);
  return start;
}

// The anchor the search's drafts leave: the row position of their source.
FS_HD int64_t ngram_search_anchor(const NgramGeometry& g, int64_t count, int from_generated, int64_t start) {
  return count > 0 ? (from_generated ? g.p + start : start) : -1;
}

// Number of drafts the best key yields, and where they start.
FS_HD int64_t ngram_drafts_of(const NgramSlot& slot, uint64_t key, const int64_t** first) {
  int generated = 0;
  int64_t start = 0;
  const int64_t count = ngram_draft_span(slot, key, &generated, &start);
  if (count > 0) *first = (generated ? slot.generated : slot.prompt) + start;
  return count;
}

// Pass 2, sequential over slots: the budget rule of docs/ops/ngram_match.md, one slot at a
// time (the XPU kernel streams the slots through local memory). Start with
// the number of running slots, then step through every slot in order.
struct NgramBudget {
  int64_t budget;   // token_budget
  int64_t running;  // prefill + decode slots
  int64_t used, seen;  // tokens and running slots stepped through so far
};

FS_HD bool ngram_slot_runs(int32_t enc, int32_t dec) { return is_prefill(enc) || is_decode(enc, dec); }

// The final seq_lens_this_time of a slot whose pass-1 value is this_time
// (decode slots are trimmed; others keep theirs).
FS_HD int32_t ngram_budget_step(NgramBudget& state, int32_t enc, int32_t dec, int32_t this_time) {
  if (is_decode(enc, dec)) {
    const int64_t reserve = state.running - state.seen - 1;
    const int64_t allowed = max64(0, sub_sat64(sub_sat64(sub_sat64(state.budget, state.used), reserve), 1));
    this_time = static_cast<int32_t>(1 + min64(this_time - 1, allowed));
  } else if (!is_prefill(enc)) {
    return this_time;
  }
  state.used += this_time;
  ++state.seen;
  return this_time;
}

// The whole pass over arrays (CPU, and one CUDA thread): in place on
// seq_lens_this_time, which pass 1 set to 1 + drafts.
FS_HD void ngram_apply_budget(const NgramMatchParams& a, int32_t* seq_lens_this_time, const int32_t* seq_lens_encoder,
                              const int32_t* seq_lens_decoder) {
  NgramBudget state{a.token_budget, 0, 0, 0};
  for (int64_t b = 0; b < a.batch; ++b) state.running += ngram_slot_runs(seq_lens_encoder[b], seq_lens_decoder[b]);
  for (int64_t b = 0; b < a.batch; ++b) {
    seq_lens_this_time[b] = ngram_budget_step(state, seq_lens_encoder[b], seq_lens_decoder[b], seq_lens_this_time[b]);
  }
}

// CPU: both passes, threads across slots. Returns kOk.
// XPU: one search launch (a cluster per slot, its cores scanning tiles), plus
// one single-cluster budget launch when token_budget > 0 (custom_ops/xpu).
// CUDA: one search launch, plus one budget launch when token_budget > 0.
// No allocation, no host synchronisation: safe inside CUDA Graph capture.
FASTSPEC_LAUNCHERS(ngram_match, NgramMatchParams);

// One valid decode slot's drafts on the CPU, ngram_match's pass 1 without its
// writes (SuffixCache's anchored n-gram drafts with it too): their count and
// *first, where they start. anchor: nullptr, or the slot's anchor in place.
int64_t ngram_slot_drafts_cpu(const NgramSlot& slot, int64_t draft_cols, int64_t* anchor, const int64_t** first);

// The CPU driver both n-gram ops share: search_slot on every slot (threaded
// when the call has enough tokens to scan), then the budget pass and its trim.
void ngram_run_cpu(const NgramMatchParams& params, void (*search_slot)(const NgramMatchParams&, int64_t));

// The budget pass alone (one single-cluster launch), shared by both n-gram ops on the XPU.
int ngram_budget_xpu(const NgramMatchParams& params, const XpuGrid& grid);

#if defined(FASTSPEC_WITH_CUDA)
// Both n-gram ops on CUDA: their search kernel (one block of `threads` per slot), then,
// when a budget is set, the budget pass (one single-block launch).
cudaError_t ngram_search_then_budget_cuda(void (*search)(NgramMatchParams), int threads, const NgramMatchParams& params,
                                          cudaStream_t stream);
#endif

}  // namespace fastspec

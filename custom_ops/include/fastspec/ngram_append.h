// ngram_append: hybrid drafting. A draft model has written its drafts into
// draft_tokens[b, 1..m] (m = seq_lens_this_time[b] - 1); the remaining draft
// columns are filled from an n-gram match of the generated tokens extended by
// those drafts. Same inputs, attributes and budget rule as ngram_match (it
// reuses NgramMatchParams). Semantics: docs/ops/ngram_append.md.
//
// Both backends run the same two passes as ngram_match: a per-slot search,
// then (token_budget > 0) the sequential budget pass of ngram_match.h.
#pragma once

#include <cstdint>

#include "fastspec/common.h"
#include "fastspec/ngram_match.h"

namespace fastspec {

// The geometry of one decode slot, from its values alone: how many model
// drafts are kept and how many may still be appended.
struct NgramAppendGeometry {
  bool searchable;           // geometry valid, room left and a query length exists
  int64_t p, s, kept;        // |P|, |G|, |D|
  int64_t room;              // drafts that may be appended: md - kept
  int32_t max_len;           // min(max_ngram_size, s + kept)
  int32_t min_len;
};

// Kept model drafts: m = clamp(seq_lens_this_time - 1, 0, K), cut to md when
// the geometry is valid (md <= 0 keeps none); invalid geometry keeps all m.
FS_HD NgramAppendGeometry ngram_append_geometry(int64_t p, int64_t s, int32_t this_time, int32_t draft_token_num,
                                                int64_t max_dec_len, int64_t draft_cols, int64_t max_model_len,
                                                int32_t max_ngram_size, int32_t min_ngram_size) {
  NgramAppendGeometry g{};
  const int64_t k = draft_cols - 1;
  const int64_t m = min64(max64(static_cast<int64_t>(this_time) - 1, 0), k);
  g.searchable = false;
  g.kept = m;
  if (p < 0 || s < 0 || p > max_model_len || s > max_model_len - p) return g;
  const int64_t md =
      max64(0, min64(min64(static_cast<int64_t>(draft_token_num), k), sub_sat64(sub_sat64(max_dec_len, s), 1)));
  g.kept = min64(m, md);
  const int64_t max_len = min64(static_cast<int64_t>(max_ngram_size), s + g.kept);
  g.p = p;
  g.s = s;
  g.room = md - g.kept;
  g.max_len = static_cast<int32_t>(max_len);
  g.min_len = min_ngram_size;
  g.searchable = g.room > 0 && max_len >= min_ngram_size;
  return g;
}

// The appended drafts the best key yields: how many, from which region (the
// prompt, or G') and where they start in it.
FS_HD int64_t ngram_append_span(const NgramAppendGeometry& g, uint64_t key, int* from_generated, int64_t* start) {
  if (!g.searchable || key == kNoMatch) return 0;
  *from_generated = ngram_key_is_generated(key);
  *start = ngram_key_end(key) + 1;
  return min64(g.room, (*from_generated ? g.s + g.kept : g.p) - *start);
}

// ngram_append's anchored continuation: the source continues after G and also
// agrees with the kept model drafts D (read through `model`, D[j] for j <
// kept). Returns the new anchor (the source of D[0]) and, through *count and
// *from, how many drafts to append from which row position; -1 when the
// search must run. Needs g.room > 0 (a valid geometry with room to append).
template <class Row, class Drafts>
FS_HD int64_t ngram_append_anchored(const Row& row, const Drafts& model, const NgramAppendGeometry& g,
                                    int64_t draft_cols, int64_t anchor, int64_t* count, int64_t* from) {
  int64_t end = 0;
  const int64_t start = ngram_anchor_continuation(row, g.p, g.s, draft_cols - 1, anchor, &end);
  if (start < 0 || start + g.kept >= end) return -1;
  for (int64_t j = 0; j < g.kept; ++j) {
    if (row(start + j) != model(j)) return -1;
  }
  *from = start + g.kept;
  *count = min64(g.room, end - *from);
  return start;
}

// The anchor the search's appended drafts leave: their row position (in G'
// terms) minus the kept model drafts, or -1.
FS_HD int64_t ngram_append_search_anchor(const NgramAppendGeometry& g, int64_t count, int from_generated,
                                         int64_t start) {
  const int64_t at = (from_generated ? g.p + start : start) - g.kept;
  return count > 0 && at >= 0 ? at : -1;
}

// One decode slot: its geometry, the prompt P, the generated tokens G and the
// kept model drafts D (G' = G ++ D is the extended generated sequence).
struct NgramAppendSlot : NgramAppendGeometry {
  const int64_t* prompt;     // P
  const int64_t* generated;  // G
  const int64_t* model;      // D = draft_tokens[b, 1..kept]
};

FS_HD NgramAppendSlot ngram_append_slot(const NgramMatchParams& a, int64_t b) {
  NgramAppendSlot slot{};
  static_cast<NgramAppendGeometry&>(slot) =
      ngram_append_geometry(a.prompt_lens[b], a.step_idx[b], a.seq_lens_this_time[b], a.draft_token_num[b],
                            a.max_dec_len[b], a.draft_cols, a.max_model_len, a.max_ngram_size, a.min_ngram_size);
  slot.model = a.draft_tokens + b * a.draft_cols + 1;
  slot.prompt = a.token_ids_all + b * a.max_model_len;
  slot.generated = slot.prompt + slot.p;  // p is 0 when the geometry is invalid
  return slot;
}

// Token j of the extended generated sequence G' (0 <= j < s + kept).
FS_HD int64_t ngram_append_ext(const NgramAppendSlot& slot, int64_t j) {
  return j < slot.s ? slot.generated[j] : slot.model[j - slot.s];
}

// Match length of a candidate ending at e: in the prompt (generated == 0) or in
// G' (generated == 1), compared backwards with the end of G', capped at max_len.
FS_HD int32_t ngram_append_length(const NgramAppendSlot& slot, int generated, int64_t e) {
  const int64_t newest = slot.s + slot.kept - 1;
  int32_t m = 0;
  while (m < slot.max_len && e - m >= 0) {
    const int64_t t = generated ? ngram_append_ext(slot, e - m) : slot.prompt[e - m];
    if (t != ngram_append_ext(slot, newest - m)) break;
    ++m;
  }
  return m;
}

// The key of the candidate ending at e (kNoMatch below min_len).
FS_HD uint64_t ngram_append_key(const NgramAppendSlot& slot, int generated, int64_t e) {
  const int32_t len = ngram_append_length(slot, generated, e);
  return len >= slot.min_len ? ngram_match_key(len, generated, e) : kNoMatch;
}

// Writes the appended drafts for the best key; returns the final draft count.
FS_HD int64_t ngram_append_write(const NgramAppendSlot& slot, uint64_t key, int64_t* drafts_row, int64_t draft_cols) {
  int generated = 0;
  int64_t start = 0;
  const int64_t n = ngram_append_span(slot, key, &generated, &start);
  // Reads of G' may hit D, which this loop writes behind: D's kept part is
  // [1, kept] and writes start at kept + 1, so nothing read is overwritten.
  for (int64_t j = 0; j < n; ++j) {
    drafts_row[1 + slot.kept + j] = generated ? ngram_append_ext(slot, start + j) : slot.prompt[start + j];
  }
  const int64_t count = slot.kept + n;
  for (int64_t k = 1 + count; k < draft_cols; ++k) drafts_row[k] = -1;
  return count;
}

// The end of a decode slot on arrays (CPU, and one CUDA thread): writes the
// anchored continuation (anchor >= 0: `count` drafts from row position `from`)
// or the best key's drafts, the new anchor and seq_lens_this_time.
FS_HD void ngram_append_finish(const NgramMatchParams& a, int64_t b, const NgramAppendSlot& slot, uint64_t best,
                               int64_t anchor, int64_t count, int64_t from) {
  int64_t* drafts = a.draft_tokens + b * a.draft_cols;
  int64_t total = 0;
  if (anchor >= 0) {
    for (int64_t j = 0; j < count; ++j) drafts[1 + slot.kept + j] = slot.prompt[from + j];
    total = slot.kept + count;
    for (int64_t k = 1 + total; k < a.draft_cols; ++k) drafts[k] = -1;
  } else {
    int generated = 0;
    int64_t start = 0;
    const int64_t appended = ngram_append_span(slot, best, &generated, &start);  // before reading generated, start
    anchor = ngram_append_search_anchor(slot, appended, generated, start);
    total = ngram_append_write(slot, best, drafts, a.draft_cols);
  }
  if (a.ngram_anchor) a.ngram_anchor[b] = anchor;
  a.seq_lens_this_time[b] = static_cast<int32_t>(1 + total);
}

// ngram_append takes ngram_match's arguments (its generated builder fills this).
using NgramAppendParams = NgramMatchParams;

// CPU: both passes. Returns kOk.
// XPU: one search launch (a cluster per slot), plus the budget launch of
// ngram_match.h when token_budget > 0.
// CUDA: one search launch (one block per slot), plus one budget launch when
// token_budget > 0. No allocation, no host synchronisation.
FASTSPEC_LAUNCHERS(ngram_append, NgramMatchParams);

}  // namespace fastspec

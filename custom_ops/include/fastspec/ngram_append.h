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

// One decode slot: the prompt P, the extended generated sequence G' = G ++ D
// (G = token_ids_all[b, p:p+s], D = the kept model drafts), and how many
// drafts may still be appended.
struct NgramAppendSlot {
  bool searchable;           // geometry valid, room left and a query length exists
  const int64_t* prompt;     // P
  const int64_t* generated;  // G
  const int64_t* model;      // D = draft_tokens[b, 1..kept]
  int64_t p, s, kept;        // |P|, |G|, |D|
  int64_t room;              // drafts that may be appended: md - kept
  int32_t max_len;           // min(max_ngram_size, s + kept)
  int32_t min_len;
};

// Kept model drafts: m = clamp(seq_lens_this_time - 1, 0, K), cut to md when
// the geometry is valid (md <= 0 keeps none); invalid geometry keeps all m.
FS_HD NgramAppendSlot ngram_append_slot(const NgramMatchParams& a, int64_t b) {
  NgramAppendSlot slot{};
  const int64_t k = a.draft_cols - 1;
  const int64_t m = min64(max64(static_cast<int64_t>(a.seq_lens_this_time[b]) - 1, 0), k);
  const int64_t p = a.prompt_lens[b];
  const int64_t s = a.step_idx[b];
  slot.searchable = false;
  slot.kept = m;
  slot.model = a.draft_tokens + b * a.draft_cols + 1;
  if (p < 0 || s < 0 || p > a.max_model_len || s > a.max_model_len - p) return slot;
  const int64_t md = max64(0, min64(min64(static_cast<int64_t>(a.draft_token_num[b]), k),
                                    a.max_dec_len[b] - s - 1));
  slot.kept = min64(m, md);
  const int64_t total = s + slot.kept;
  const int64_t max_len = min64(static_cast<int64_t>(a.max_ngram_size), total);
  slot.prompt = a.token_ids_all + b * a.max_model_len;
  slot.generated = slot.prompt + p;
  slot.p = p;
  slot.s = s;
  slot.room = md - slot.kept;
  slot.max_len = static_cast<int32_t>(max_len);
  slot.min_len = a.min_ngram_size;
  slot.searchable = slot.room > 0 && max_len >= a.min_ngram_size;
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
FS_HD int64_t ngram_append_write(const NgramAppendSlot& slot, uint64_t key, int64_t* drafts_row,
                                 int64_t draft_cols) {
  int64_t count = slot.kept;
  if (slot.searchable && key != kNoMatch) {
    const int gen = ngram_key_is_generated(key);
    const int64_t start = ngram_key_end(key) + 1;
    const int64_t end = gen ? slot.s + slot.kept : slot.p;
    const int64_t n = min64(slot.room, end - start);
    // Reads of G' may hit D, which this loop writes behind: D's kept part is
    // [1, kept] and writes start at kept + 1, so nothing read is overwritten.
    for (int64_t j = 0; j < n; ++j) {
      drafts_row[1 + count + j] = gen ? ngram_append_ext(slot, start + j) : slot.prompt[start + j];
    }
    count += n;
  }
  for (int64_t k = 1 + count; k < draft_cols; ++k) drafts_row[k] = -1;
  return count;
}

// CPU: both passes. Returns kOk.
int ngram_append_cpu(const NgramMatchParams& params);

#if defined(FASTSPEC_WITH_CUDA)
// CUDA: one search launch (one block per slot), plus one budget launch when
// token_budget > 0. No allocation, no host synchronisation.
cudaError_t ngram_append_cuda(const NgramMatchParams& params, cudaStream_t stream);
#endif

}  // namespace fastspec

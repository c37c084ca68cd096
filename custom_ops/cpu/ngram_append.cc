// ngram_append on the CPU: threads across slots; within a slot one left to
// right pass per region keeps the best (longest, prompt first, leftmost) match.
#include "fastspec/ngram_append.h"
#include "find_token.h"

#include <cstdint>

namespace fastspec {
namespace {

// Best key among candidates ending in [0, last_end] of one region, improving
// on `best` only with a strictly better one (left to right keeps the leftmost).
// Only positions holding the newest token can start a match; they are found in
// the contiguous part (the prompt, or G of G' = G ++ D), then D is walked.
uint64_t scan(const NgramAppendSlot& slot, int generated, int64_t last_end, uint64_t best) {
  const FindTokenFn find_token = find_token_fn();
  const int64_t newest = ngram_append_ext(slot, slot.s + slot.kept - 1);
  const int64_t* region = generated ? slot.generated : slot.prompt;
  const int64_t contiguous_end = generated ? min64(last_end + 1, slot.s) : last_end + 1;
  const auto consider = [&](int64_t e) {
    const uint64_t key = ngram_append_key(slot, generated, e);
    if (key < best) best = key;
    return key != kNoMatch && ngram_key_length(key) == slot.max_len;  // nothing later is longer
  };
  for (int64_t e = find_token(region, 0, contiguous_end, newest); e < contiguous_end;
       e = find_token(region, e + 1, contiguous_end, newest)) {
    if (consider(e)) return best;
  }
  for (int64_t e = max64(contiguous_end, 0); e <= last_end; ++e) {
    if (ngram_append_ext(slot, e) == newest && consider(e)) return best;
  }
  return best;
}

void search_slot(const NgramMatchParams& a, int64_t b) {
  const int32_t enc = a.seq_lens_encoder[b];
  const int64_t anchor_in = a.ngram_anchor ? a.ngram_anchor[b] : -1;
  if (a.ngram_anchor) a.ngram_anchor[b] = -1;  // kept only by a slot that drafts from a source below
  if (is_prefill(enc)) return;
  int64_t* drafts = a.draft_tokens + b * a.draft_cols;
  if (!is_decode(enc, a.seq_lens_decoder[b])) {
    for (int64_t k = 1; k < a.draft_cols; ++k) drafts[k] = -1;
    a.seq_lens_this_time[b] = 0;
    return;
  }
  const NgramAppendSlot slot = ngram_append_slot(a, b);
  int64_t anchor = -1, count = 0, from = 0;
  if (slot.room > 0 && a.ngram_anchor) {
    anchor =
        ngram_append_anchored(RowRef{slot.prompt}, RowRef{slot.model}, slot, a.draft_cols, anchor_in, &count, &from);
  }
  uint64_t best = kNoMatch;
  if (slot.searchable && anchor < 0) {
    best = scan(slot, 0, slot.p - 2, best);
    if (best == kNoMatch || ngram_key_length(best) < slot.max_len) {
      best = scan(slot, 1, slot.s + slot.kept - 2, best);
    }
  }
  ngram_append_finish(a, b, slot, best, anchor, count, from);
}

}  // namespace

int ngram_append_cpu(const NgramMatchParams& a) {
  ngram_run_cpu(a, search_slot);
  return kOk;
}

}  // namespace fastspec

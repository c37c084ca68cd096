#include "ngram_choice.h"

#include <cstdint>

#include "fastspec/ngram_match.h"

namespace fastspec::suffix {

NgramChoice::NgramChoice(const NgramRule& rule, const int32_t* prompt, int64_t n)
    : rule_(rule), prompt_len_(n), row_(prompt, prompt + n) {}

void NgramChoice::choose(std::vector<int32_t>& draft, int32_t max_tokens) {
  offered_[0].assign(draft.begin(), draft.end());
  offered_[1].clear();
  pending_ = true;
  // the request as one decode slot of ngram_match (seq_lens_decoder = p + s, no max_dec_len)
  const int64_t known = static_cast<int64_t>(row_.size()), s = known - prompt_len_;
  const int64_t draft_cols = int64_t{max_tokens} + 1;
  NgramSlot slot{};
  static_cast<NgramGeometry&>(slot) = ngram_geometry(prompt_len_, s, max_tokens, INT64_MAX, draft_cols, known,
                                                     rule_.max_ngram_size, rule_.min_ngram_size);
  if (known == 0 || !slot.valid) {
    anchor_ = -1;  // what ngram_match leaves for a slot it does not draft for
  } else {
    slot.prompt = row_.data();
    slot.generated = row_.data() + prompt_len_;
    const int64_t* first = nullptr;
    const int64_t count = ngram_slot_drafts_cpu(slot, draft_cols, &anchor_, &first);
    offered_[1].assign(first, first + count);
  }
  const int64_t mine = static_cast<int64_t>(offered_[0].size()), other = static_cast<int64_t>(offered_[1].size());
  if (!first_wins(scores_.preference(), mine, other)) draft.assign(offered_[1].begin(), offered_[1].end());
}

size_t NgramChoice::memory_bytes() const {
  return sizeof(*this) + (row_.capacity() + offered_[0].capacity() + offered_[1].capacity()) * sizeof(int64_t);
}

}  // namespace fastspec::suffix

// NgramChoice: a request's second drafter for SuffixCache::draft (docs/suffix.md).
// Anchored n-gram over the request's prompt + response, by ngram_match's own
// CPU code (fastspec/ngram_match.h) on a one-slot view of the request, and
// DraftChoice's averages (draft_choice.h) over the two drafts it last offered,
// scored against the tokens appended next. Together with the suffix draft this
// is the suffix method's default (`with_anchored_ngram`) in one native call per
// draft and one per append.
#pragma once

#include <cstdint>
#include <vector>

#include "draft_choice.h"

namespace fastspec::suffix {

struct NgramRule {
  int32_t max_ngram_size = 0;  // 0: no second drafter
  int32_t min_ngram_size = 1;
};

class NgramChoice {
 public:
  NgramChoice(const NgramRule& rule, const int32_t* prompt, int64_t n);

  // draft holds the suffix draft; it becomes the anchored n-gram draft (at most max_tokens
  // tokens, as ngram_match drafts for draft_token_num = K = max_tokens) when DraftChoice says so.
  // Both drafts are kept until the next score().
  void choose(std::vector<int32_t>& draft, int32_t max_tokens);

  // The drafts offered last against kept[:n] (what the target kept), once per choose().
  template <class Kept>
  void score(const Kept* kept, int64_t n) {
    if (!pending_) return;
    scores_.observe(accepted_prefix(offered_[0].data(), static_cast<int64_t>(offered_[0].size()), kept, n),
                    accepted_prefix(offered_[1].data(), static_cast<int64_t>(offered_[1].size()), kept, n));
    pending_ = false;
  }

  void append(const int32_t* tokens, int64_t n) { row_.insert(row_.end(), tokens, tokens + n); }
  size_t memory_bytes() const;

 private:
  NgramRule rule_;
  int64_t prompt_len_;
  int64_t anchor_ = -1;       // ngram_match's ngram_anchor for this request
  std::vector<int64_t> row_;  // prompt + response, the token_ids_all row ngram_match reads
  DraftScores scores_;
  std::vector<int64_t> offered_[2];  // the suffix draft, the n-gram draft
  bool pending_ = false;
};

}  // namespace fastspec::suffix

// DraftChoice in C++: which of two drafters to trust, from what each would
// have got accepted (the rule and its numpy reference:
// fastspec/reference/draft_choice.py). SuffixCache::draft keeps one
// DraftScores per request; draft_choice_observe serves the proposer's slots.
// The arithmetic is numpy's, operation for operation, so the averages and
// hence every choice are the same bit for bit (the build passes no -march, so
// the compiler has no fused multiply-add to contract them into).
#pragma once

#include <algorithm>
#include <cstdint>

namespace fastspec::suffix {

constexpr double kDraftChoiceRate = 0.3;  // weight of the newest step in the running averages

// The longest common prefix of draft[:draft_len] and kept[:kept_num] (negative lengths count as 0).
template <class Kept>
int64_t accepted_prefix(const int64_t* draft, int64_t draft_len, const Kept* kept, int64_t kept_num) {
  const int64_t n = std::max<int64_t>(0, std::min(draft_len, kept_num));
  int64_t i = 0;
  while (i < n && draft[i] == kept[i]) ++i;
  return i;
}

// The preferred drafter's draft when it has one, the other's when it has none; without a
// preference the longer draft, the second's on ties.
inline bool first_wins(int preference, int64_t len_first, int64_t len_second) {
  return (preference == 1 && len_first > 0) || (preference == -1 && len_second == 0) ||
         (preference == 0 && len_first > len_second);
}

// One request's (or slot's) running averages of the two drafters' accepted tokens.
struct DraftScores {
  double first = 0.0, second = 0.0;

  // 1: the first drafter, -1: the second, 0: neither (the sign of the difference)
  int preference() const {
    const double d = first - second;
    return (d > 0) - (d < 0);
  }

  void observe(int64_t got_first, int64_t got_second, double rate = kDraftChoiceRate) {
    first = first + rate * (static_cast<double>(got_first) - first);
    second = second + rate * (static_cast<double>(got_second) - second);
  }
};

// DraftChoice.observe over n slots: averages [n, 2] in place, rows where mask; each drafter's
// drafts [n, width] and lens [n]; the kept tokens [n, kept_width] and kept_num [n]. A draft is
// compared over at most min(its width, kept_width) columns.
struct DraftRows {
  const int64_t* tokens;
  const int32_t* lens;
  int64_t width;
};
void draft_choice_observe(double* averages, const bool* mask, const DraftRows& first, const DraftRows& second,
                          const DraftRows& kept, int64_t n, double rate);

}  // namespace fastspec::suffix

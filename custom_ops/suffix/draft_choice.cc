#include "draft_choice.h"

namespace fastspec::suffix {

namespace {
int64_t accepted_row(const DraftRows& drafts, const DraftRows& kept, int64_t i) {
  const int64_t width = std::min(drafts.width, kept.width);
  return accepted_prefix(drafts.tokens + i * drafts.width, std::min<int64_t>(drafts.lens[i], width),
                         kept.tokens + i * kept.width, std::min<int64_t>(kept.lens[i], width));
}
}  // namespace

void draft_choice_observe(double* averages, const bool* mask, const DraftRows& first, const DraftRows& second,
                          const DraftRows& kept, int64_t n, double rate) {
  for (int64_t i = 0; i < n; ++i) {
    if (!mask[i]) continue;
    DraftScores scores{averages[2 * i], averages[2 * i + 1]};
    scores.observe(accepted_row(first, kept, i), accepted_row(second, kept, i), rate);
    averages[2 * i] = scores.first;
    averages[2 * i + 1] = scores.second;
  }
}

}  // namespace fastspec::suffix

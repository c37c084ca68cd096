// adaptive_plan and adaptive_observe on the CPU: the shared rules of
// fastspec/adaptive.h on one thread (a step of B = 256, K = 5 ranks 1536
// candidates: microseconds, below the pool's hand-off).
#include "fastspec/adaptive.h"

#include <algorithm>
#include <numeric>

namespace fastspec {

int adaptive_plan_cpu(const AdaptivePlanParams& p) {
  const int64_t cols = p.draft_cols, total = p.batch * cols;
  const int64_t step = next_probe_step(*p.probe_step);
  *p.probe_step = step;
  const float prior = p.rates[kPrior];
  float prefill = 0.0f;
  for (int64_t b = 0; b < p.batch; ++b) {
    slot_worth(p.acceptance + b * cols, p.worth + b * cols, cols, b, slot_probes(b, step, p.probe_interval), prior,
               p.probe_interval > 0);
    prefill += slot_prefills(p.seq_lens_encoder[b], p.stop_flags[b], p.is_block_step[b]) ? 1.0f : 0.0f;
  }
  std::iota(p.ranking, p.ranking + total, 0);
  const float* worth = p.worth;
  std::sort(p.ranking, p.ranking + total,
            [worth](int32_t a, int32_t b) { return ranks_before(worth[a], a, worth[b], b); });
  PlanScan scan;
  scan.prefill = prefill;
  for (int64_t rank = 0; rank < total; ++rank) {
    const int64_t index = p.ranking[rank];
    const int64_t cost = scan.add(worth[index], candidate_rows(index, cols, p.found[index / cols]), p.cost_len);
    scan.rate(p.step_cost[cost], rank);
  }
  const float threshold = worth[p.ranking[scan.best]];
  for (int64_t b = 0; b < p.batch; ++b) p.draft_token_num[b] = slot_drafts(worth + b * cols, cols, threshold);
  return kOk;
}

int adaptive_observe_cpu(const AdaptiveObserveParams& p) {
  const int64_t cols = p.draft_cols, k = cols - 1;
  for (int64_t b = 0; b < p.batch; ++b) {
    float* estimates = p.acceptance + b * cols;
    const int64_t rows = static_cast<int64_t>(p.cu_seqlens_q_output[b + 1]) - p.cu_seqlens_q_output[b];
    const bool tried = estimates[0] > 0.0f && p.draft_token_num[b] > 0;
    const bool hit = rows > 1;
    p.found[b] = observe_found(p.found[b], tried, hit, p.rates[kLearningRate]);
    const ObserveRow row = observe_row(rows, p.accept_num[b], tried && !hit, k);
    for (int64_t j = 0; j < cols; ++j) estimates[j] = observe_column(row, j, estimates[j], p.rates);
  }
  return kOk;
}

}  // namespace fastspec

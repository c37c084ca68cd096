// adaptive_plan and adaptive_observe on the CPU: the shared rules of
// fastspec/adaptive.h on one thread (a step of B = 256, K = 5 ranks 1536
// candidates: microseconds, below the pool's hand-off). The ranking is a stable
// LSD radix sort of each candidate's order key (ranking_key: the order of
// ranks_before as an unsigned integer), so ties keep index order without a
// comparison, and random worths cost no mispredicted branches.
#include "fastspec/adaptive.h"

#include <cstring>
#include <vector>

namespace fastspec {
namespace {

// Candidates [0, n) by ranking_key ascending, ties by index: four stable passes of 8 bits.
void rank_candidates(const float* worth, int32_t* ranking, int64_t n) {
  thread_local std::vector<uint32_t> keys, keys_next;
  thread_local std::vector<int32_t> next;
  keys.resize(n);
  keys_next.resize(n);
  next.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    keys[i] = ranking_key(worth[i]);
    ranking[i] = static_cast<int32_t>(i);
  }
  uint32_t* key = keys.data();
  uint32_t* key_out = keys_next.data();
  int32_t* index = ranking;
  int32_t* index_out = next.data();
  for (int shift = 0; shift < 32; shift += 8) {
    int64_t count[257] = {};
    for (int64_t i = 0; i < n; ++i) ++count[((key[i] >> shift) & 0xff) + 1];
    for (int d = 0; d < 256; ++d) count[d + 1] += count[d];
    for (int64_t i = 0; i < n; ++i) {
      const int64_t at = count[(key[i] >> shift) & 0xff]++;
      key_out[at] = key[i];
      index_out[at] = index[i];
    }
    std::swap(key, key_out);
    std::swap(index, index_out);
  }
  // four passes: the result is back in `ranking`
}

}  // namespace

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
  const float* worth = p.worth;
  rank_candidates(worth, p.ranking, total);
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
  for (int64_t b = 0; b < p.batch; ++b) observe_slot(p, b);
  return kOk;
}

}  // namespace fastspec

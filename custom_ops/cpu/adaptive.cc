// adaptive_plan and adaptive_observe on the CPU: the shared rules of
// fastspec/adaptive.h on one thread (a step of B = 256, K = 5 ranks 1536
// candidates: microseconds, below the pool's hand-off).
//
// The ranking sorts one 64-bit word per candidate, its order key (ranking_key:
// ranks_before as an unsigned integer) above its index, so ties fall to the
// index. Two radix passes order the words by the key's top 16 bits (sign,
// exponent, 7 mantissa bits) and an insertion pass finishes the rest: a plan's
// candidates rarely share 16 bits out of order (each slot's worth row falls, and
// the decoding slots' column 0 is 1 - 2^-22 b, already in index order). Inputs
// that would make the insertion pass long (crafted estimates, many near-equal
// worths against index order) stop it at a budget and are radix-sorted on all 32
// bits instead; both paths give the one order of ranks_before. Figures and what
// was tried: docs/performance.md, "The draft-length controller as two ops".
#include "fastspec/adaptive.h"

#include <cstring>
#include <vector>

namespace fastspec {
namespace {

constexpr int64_t kMovesPerCandidate = 2;  // the insertion pass's budget

// Reused between calls (the thread's own). Loops work on local pointers into it: a
// thread_local's address in a shared library costs a call each time it is taken.
struct PlanScratch {
  std::vector<uint64_t> words, spare;  // (key << 32 | index), sorted in place
  std::vector<float> rates;            // the scan's rate at each rank
};

uint64_t order_word(const float* worth, int64_t i) {
  return static_cast<uint64_t>(ranking_key(worth[i])) << 32 | static_cast<uint32_t>(i);
}

// One stable pass of the words by key digit `digit` (0: the lowest 8 bits); returns the array
// now holding them (a digit every key shares moves nothing). The words are counted and moved as
// kStripes interleaved stripes, each with its own counters: where neighbouring keys share a
// digit (a plan's usually do), one counter would make every increment wait on the last.
constexpr int kStripes = 4;
uint64_t* radix_pass(int digit, int64_t n, uint64_t* in, uint64_t* out) {
  const int shift = 32 + 8 * digit;
  const int64_t stripe = n / kStripes;  // stripe s: [s stripe, (s + 1) stripe); the last one runs to n
  uint32_t at[kStripes][256] = {};
  for (int64_t i = 0; i < stripe; ++i)
    for (int s = 0; s < kStripes; ++s) ++at[s][(in[s * stripe + i] >> shift) & 0xff];
  for (int64_t i = kStripes * stripe; i < n; ++i) ++at[kStripes - 1][(in[i] >> shift) & 0xff];
  uint32_t sum = 0;
  for (int v = 0; v < 256; ++v) {
    const uint32_t first = sum;
    for (int s = 0; s < kStripes; ++s) {
      const uint32_t count = at[s][v];
      at[s][v] = sum;
      sum += count;
    }
    if (static_cast<int64_t>(sum - first) == n) return in;
  }
  for (int64_t i = 0; i < stripe; ++i)
    for (int s = 0; s < kStripes; ++s) {
      const uint64_t w = in[s * stripe + i];
      out[at[s][(w >> shift) & 0xff]++] = w;
    }
  for (int64_t i = kStripes * stripe; i < n; ++i) out[at[kStripes - 1][(in[i] >> shift) & 0xff]++] = in[i];
  return out;
}

// Insertion-sorts words, whole, while the moves stay within `budget`; false when they would not.
bool insertion_sort(uint64_t* words, int64_t n, int64_t budget) {
  for (int64_t i = 1; i < n; ++i) {
    const uint64_t w = words[i];
    int64_t j = i;
    for (; j > 0 && words[j - 1] > w; --j) words[j] = words[j - 1];
    words[j] = w;
    budget -= i - j;
    if (budget < 0) return false;
  }
  return true;
}

// Candidates [0, n) by ranking_key ascending, ties by index, into ranking.
void rank_candidates(PlanScratch& s, const float* worth, int32_t* ranking, int64_t n) {
  s.words.resize(n);
  s.spare.resize(n);
  uint64_t* in = s.words.data();
  uint64_t* out = s.spare.data();
  for (int64_t i = 0; i < n; ++i) in[i] = order_word(worth, i);
  uint64_t* sorted = in;  // by the keys' top 16 bits, then the rest by insertion
  for (int digit = 2; digit < 4; ++digit) sorted = radix_pass(digit, n, sorted, sorted == in ? out : in);
  if (!insertion_sort(sorted, n, kMovesPerCandidate * n)) {
    for (int64_t i = 0; i < n; ++i) in[i] = order_word(worth, i);
    sorted = in;
    for (int digit = 0; digit < 4; ++digit) sorted = radix_pass(digit, n, sorted, sorted == in ? out : in);
  }
  for (int64_t i = 0; i < n; ++i) ranking[i] = static_cast<int32_t>(static_cast<uint32_t>(sorted[i]));
}

}  // namespace

int adaptive_plan_cpu(const AdaptivePlanParams& p) {
  static thread_local PlanScratch s;
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
  rank_candidates(s, worth, p.ranking, total);
  PlanScan scan;
  scan.prefill = prefill;
  s.rates.resize(total);
  float* rates = s.rates.data();
  for (int64_t rank = 0; rank < total; ++rank) {
    const int64_t index = p.ranking[rank];
    const int64_t cost = scan.add(worth[index], candidate_rows(index, cols, p.found[index / cols]), p.cost_len);
    rates[rank] = scan.step_rate(p.step_cost[cost]);
  }
  for (int64_t rank = 0; rank < total; ++rank) scan.keep_best(rates[rank], rank);
  const float threshold = worth[p.ranking[scan.best]];
  for (int64_t b = 0; b < p.batch; ++b) p.draft_token_num[b] = slot_drafts(worth + b * cols, cols, threshold);
  return kOk;
}

int adaptive_observe_cpu(const AdaptiveObserveParams& p) {
  for (int64_t b = 0; b < p.batch; ++b) observe_slot(p, b);
  return kOk;
}

}  // namespace fastspec

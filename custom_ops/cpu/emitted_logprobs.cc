// emitted_logprobs on the CPU: a record by one thread in passes over its row
// (softmax_rows.h's maximum and NaN flag at every SIMD level; s = x / tau;
// softmax_rows.h's exp(s * 1 - m) into the 256 lane sums, s * 1 being s exactly;
// the best `width` entries of s kept in a sorted list), records over the pool from
// 2^18 entries of emitted rows.
#include "fastspec/emitted_logprobs.h"

#include <algorithm>
#include <vector>

#include "fastspec/parallel.h"
#include "softmax_rows.h"

namespace fastspec {
namespace {

constexpr int64_t kParallelEntries = int64_t{1} << 18;

struct Listed {
  float s;
  int64_t id;
};

// The row's `cap` best (s, id), best first, offered in increasing id: an entry enters
// when the list has room or its s is above the last kept one's (an equal s, with its
// larger id, comes after it).
class BestList {
 public:
  explicit BestList(int64_t cap) : cap_(cap) { entries_.reserve(static_cast<size_t>(cap)); }

  bool wants(float s) const {
    return static_cast<int64_t>(entries_.size()) < cap_ || (cap_ > 0 && s > entries_.back().s);
  }

  // Only an entry it wants.
  void offer(float s, int64_t id) {
    if (static_cast<int64_t>(entries_.size()) == cap_) entries_.pop_back();
    int64_t i = static_cast<int64_t>(entries_.size());
    entries_.push_back({s, id});
    for (; i > 0 && listed_before(s, id, entries_[i - 1].s, entries_[i - 1].id); --i) entries_[i] = entries_[i - 1];
    entries_[i] = {s, id};
  }

  const std::vector<Listed>& entries() const { return entries_; }

 private:
  int64_t cap_;
  std::vector<Listed> entries_;
};

// A thread's row-sized buffers, kept between records and calls.
struct RowScratch {
  std::vector<float> scaled, exps;
};

template <typename Level>
void write_record(Level level, const EmittedLogprobsParams& p, int64_t b, int64_t j, RowScratch& scratch) {
  int64_t* record = record_of(p, b, j);
  int64_t row = 0, token = 0;
  if (!emitted_row(p, b, j, &row, &token)) {
    for (int64_t i = 0; i <= p.width; ++i) record[i] = 0;
    return;
  }
  const float* x = p.logits + row * p.vocab;
  const float tau = logprobs_temperature(p.temperature[b]);
  const RowMax raw = row_max(level, x, p.vocab);
  const float m = div_f32(raw.max, tau);  // dividing by tau > 0 keeps the order
  if (!softmax_row_valid(m, raw.nan)) {
    write_row_without_logprobs(p, record, token);
    return;
  }
  scratch.scaled.resize(static_cast<size_t>(p.vocab));
  scratch.exps.resize(static_cast<size_t>(p.vocab));
  float* s = scratch.scaled.data();
  if (tau == 1.0f) {
    s = const_cast<float*>(x);  // x / 1 is x: read the row itself (only read below)
  } else {
    for (int64_t v = 0; v < p.vocab; ++v) s[v] = div_f32(x[v], tau);
  }
  alignas(64) float lanes[kSoftmaxLanes] = {};
  exp_row(level, s, scratch.exps.data(), p.vocab, 1.0f, m, lanes);
  const float log_sum = softmax_log(fold_softmax_lanes(lanes));
  record[0] = logprob_key(logprob_of(s[token], m, log_sum), token);
  BestList best(listed_count(p));
  for (int64_t v = 0; v < p.vocab; ++v) {
    if (best.wants(s[v])) best.offer(s[v], v);
  }
  const std::vector<Listed>& listed = best.entries();
  for (int64_t i = 0; i < p.width; ++i) {
    record[1 + i] =
        i < static_cast<int64_t>(listed.size()) ? logprob_key(logprob_of(listed[i].s, m, log_sum), listed[i].id) : 0;
  }
}

}  // namespace

int emitted_logprobs_cpu(const EmittedLogprobsParams& p) {
  if (!logprobs_sizes_ok(p)) return kInvalidArgument;
  const int64_t records = p.batch * p.draft_cols;
  const auto run = [&](int64_t begin, int64_t end) {
    thread_local RowScratch scratch;
    with_simd_level([&](auto level) {
      for (int64_t r = begin; r < end; ++r) write_record(level, p, r / p.draft_cols, r % p.draft_cols, scratch);
      return 0;
    });
  };
  // the records that read a row: the emitted ones
  int64_t emitted = 0;
  for (int64_t b = 0; b < p.batch; ++b)
    emitted += p.accept_num[b] <= 0 ? 0 : std::min<int64_t>(p.accept_num[b], p.draft_cols);
  if (emitted > 1 && emitted * p.vocab >= kParallelEntries) {
    parallel_for(records, 1, run);
  } else {
    run(0, records);
  }
  return kOk;
}

}  // namespace fastspec

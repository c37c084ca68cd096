// emitted_logprobs on the CPU: a record by one thread in two passes over its row
// (the maximum and a NaN flag; then s = x / tau, exp(s - m) into the 256 lane sums
// and the best `width` entries kept in a sorted list), records over the pool from
// 2^18 entries of rows to read.
#include "fastspec/emitted_logprobs.h"

#include <vector>

#include "fastspec/parallel.h"

namespace fastspec {
namespace {

constexpr int64_t kParallelEntries = int64_t{1} << 18;

struct Listed {
  float s;
  int64_t id;
};

// The row's `cap` best (s, id), best first: an entry enters when it comes before the last
// kept one (ids arrive in increasing order, so an equal s never does).
class BestList {
 public:
  explicit BestList(int64_t cap) : cap_(cap) { entries_.reserve(static_cast<size_t>(cap)); }

  void offer(float s, int64_t id) {
    const int64_t n = static_cast<int64_t>(entries_.size());
    if (n == cap_) {
      if (n == 0 || !listed_before(s, id, entries_[n - 1].s, entries_[n - 1].id)) return;
      entries_.pop_back();
    }
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

void write_record(const EmittedLogprobsParams& p, int64_t b, int64_t j) {
  int64_t* record = record_of(p, b, j);
  int64_t row = 0, token = 0;
  if (!emitted_row(p, b, j, &row, &token)) {
    for (int64_t i = 0; i <= p.width; ++i) record[i] = 0;
    return;
  }
  const float* x = p.logits + row * p.vocab;
  const float tau = logprobs_temperature(p.temperature[b]);
  float raw_max = bits_to_f32(0xff800000u);
  bool nan = false;
  for (int64_t v = 0; v < p.vocab; ++v) {
    nan |= is_nan_f32(x[v]);
    raw_max = x[v] > raw_max ? x[v] : raw_max;
  }
  const float m = div_f32(raw_max, tau);  // dividing by tau > 0 keeps the order
  if (!softmax_row_valid(m, nan)) {
    write_row_without_logprobs(p, record, token);
    return;
  }
  float lanes[kSoftmaxLanes] = {};
  BestList best(listed_count(p));
  for (int64_t v = 0; v < p.vocab; ++v) {
    const float s = div_f32(x[v], tau);
    lanes[v % kSoftmaxLanes] = add_f32(lanes[v % kSoftmaxLanes], softmax_exp(sub_f32(s, m)));
    best.offer(s, v);
  }
  const float log_sum = softmax_log(fold_softmax_lanes(lanes));
  record[0] = logprob_key(logprob_of(div_f32(x[token], tau), m, log_sum), token);
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
    for (int64_t r = begin; r < end; ++r) write_record(p, r / p.draft_cols, r % p.draft_cols);
  };
  // the records that read a row: the emitted ones
  int64_t emitted = 0;
  for (int64_t b = 0; b < p.batch; ++b) emitted += p.accept_num[b] > 0 ? p.accept_num[b] : 0;
  if (emitted > 1 && emitted * p.vocab >= kParallelEntries) {
    parallel_for(records, 1, run);
  } else {
    run(0, records);
  }
  return kOk;
}

}  // namespace fastspec

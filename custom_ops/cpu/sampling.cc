// top_p_candidates and sample_tokens on the CPU: threads across rows (the
// project's pool, fastspec/parallel.h), one row per task, so the results do
// not depend on the thread count. Within a row (see fastspec/sampling.h):
//   1. one pass: number of valid entries and their total mass;
//   2. radix selects over the combined key find the top-K' / top-k / top-p
//      cuts exactly, without sorting the row: level 0 reads the row, level 1
//      reads it again and compacts the chosen bucket's keys, deeper levels
//      work on that compacted list only;
//   3. top_p_candidates gathers the <= K' survivors and sorts only them;
//      sample_tokens draws in one pass over the row in id order.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "fastspec/parallel.h"
#include "fastspec/sampling.h"

namespace fastspec {
namespace {

struct SelectResult {
  uint64_t cut;        // combined key of the element where the weight reaches the target
  int64_t mass_upto;   // mass of every set element with combined >= cut
};

// Per-thread scratch: histograms and the compacted keys of the chosen bucket.
struct Scratch {
  int64_t count[kRadixBuckets];
  int64_t mass[kRadixBuckets];
  int64_t last[kRadixBuckets];
  std::vector<uint64_t> keys;
};

template <typename Tag>
struct Row {
  const typename Tag::T* p;
  int64_t vocab;
  int id_bits;
  FS_HD uint32_t key(int64_t i) const { return key_of(Tag{}, p, i); }
  uint64_t combined(int64_t i) const { return combined_key(key(i), i, vocab, id_bits); }
};

// The cut of the set {combined >= lower} where, in probability order, the
// cumulative weight (count when by_mass is false, else mass) first reaches
// `target`. Preconditions: 1 <= target <= total weight of the set.
template <typename Tag>
SelectResult radix_select(const Row<Tag>& row, uint64_t lower, int64_t target, bool by_mass,
                          Scratch& s) {
  const int width = combined_width(row.id_bits);
  uint64_t prefix = 0;  // the chosen high bits, in place
  int done = 0;         // bits chosen so far
  int64_t above_w = 0, above_mass = 0;
  int64_t n_keys = 0;
  for (int level = 0;; ++level) {
    const int shift = width - done > kRadixBits ? width - done - kRadixBits : 0;
    const int digits = width - done - shift;
    const int high = shift + digits;  // bits above `high` must equal prefix's
    std::fill(s.count, s.count + (1 << digits), 0);
    std::fill(s.mass, s.mass + (1 << digits), 0);
    const uint64_t mask = (uint64_t{1} << digits) - 1;
    auto visit = [&](uint64_t c, int64_t where) {
      const uint32_t d = static_cast<uint32_t>((c >> shift) & mask);
      s.count[d] += 1;
      s.mass[d] += mass_of_bits(cut_bits(c, row.id_bits));
      s.last[d] = where;
    };
    if (level == 0) {
      for (int64_t i = 0; i < row.vocab; ++i) {
        const uint64_t c = row.combined(i);
        if (c >= lower) visit(c, i);
      }
    } else if (level == 1) {
      if (static_cast<int64_t>(s.keys.size()) < row.vocab) s.keys.resize(row.vocab);
      n_keys = 0;
      for (int64_t i = 0; i < row.vocab; ++i) {
        const uint64_t c = row.combined(i);
        if (c >= lower && (c >> high) == (prefix >> high)) {
          s.keys[n_keys] = c;
          visit(c, n_keys);
          ++n_keys;
        }
      }
    } else {
      int64_t n = 0;
      for (int64_t j = 0; j < n_keys; ++j) {
        const uint64_t c = s.keys[j];
        if ((c >> high) == (prefix >> high)) {
          s.keys[n] = c;
          visit(c, n);
          ++n;
        }
      }
      n_keys = n;
    }
    // Walk the buckets from the top until the weight reaches the target.
    int d = (1 << digits) - 1;
    for (;; --d) {
      const int64_t w = by_mass ? s.mass[d] : s.count[d];
      if (above_w + w >= target || d == 0) break;
      above_w += w;
      above_mass += s.mass[d];
    }
    prefix |= static_cast<uint64_t>(d) << shift;
    done += digits;
    if (s.count[d] == 1 || shift == 0) {
      const uint64_t cut = s.count[d] == 1
                               ? (level == 0 ? row.combined(s.last[d]) : s.keys[s.last[d]])
                               : prefix;
      return {cut, above_mass + mass_of_bits(cut_bits(cut, row.id_bits))};
    }
  }
}

Scratch& thread_scratch() {
  thread_local Scratch scratch;
  return scratch;
}

// Rows [0, rows) through fn(begin, end): on the pool, or inline when
// num_threads == 1 (the results are the same either way).
template <typename Fn>
void for_rows(int64_t rows, int32_t num_threads, const Fn& fn) {
  if (num_threads == 1 || rows <= 1) {
    if (rows > 0) fn(0, rows);
    return;
  }
  parallel_for(rows, 1, fn);
}

struct RowTotals {
  int64_t n_valid;
  int64_t mass;
};

template <typename Tag>
RowTotals row_totals(const Row<Tag>& row) {
  int64_t n = 0, m = 0;
  for (int64_t i = 0; i < row.vocab; ++i) {
    const uint32_t k = row.key(i);
    n += k != 0;
    m += mass_of_bits(k);
  }
  return {n, m};
}

template <typename Tag>
void top_p_candidates_rows(const TopPCandidatesParams& a) {
  const typename Tag::T* probs = static_cast<const typename Tag::T*>(a.probs);
  const int64_t kk = a.max_candidate_len;
  const int id_bits = id_bits_for(a.vocab);
  const uint64_t all_valid = uint64_t{1} << id_bits;
  for_rows(a.rows, a.num_threads, [&](int64_t begin, int64_t end) {
    Scratch& scratch = thread_scratch();
    uint64_t cand[kMaxCandidateLen];
    for (int64_t t = begin; t < end; ++t) {
      int64_t* ids = a.candidate_ids + t * kk;
      float* scores = a.candidate_scores + t * kk;
      int64_t len = 0;
      int64_t b;
      if (row_request(a.batch_id_per_token_output, t, a.batch, &b)) {
        const Row<Tag> row{probs + t * a.vocab, a.vocab, id_bits};
        const RowTotals totals = row_totals(row);
        if (totals.n_valid > 0) {
          uint64_t cut = all_valid;
          if (totals.n_valid > kk) cut = radix_select(row, all_valid, kk, false, scratch).cut;
          int64_t n = 0;
          for (int64_t i = 0; i < a.vocab; ++i) {
            const uint64_t c = row.combined(i);
            if (c >= cut) cand[n++] = c;
          }
          std::sort(cand, cand + n, [](uint64_t x, uint64_t y) { return x > y; });
          const int64_t thr = topp_threshold(totals.mass, a.top_p[b]);
          int64_t cum = 0;
          len = n;
          for (int64_t j = 0; j < n; ++j) {
            cum += mass_of_bits(cut_bits(cand[j], id_bits));
            if (cum >= thr) {
              len = j + 1;
              break;
            }
          }
          for (int64_t j = 0; j < len; ++j) {
            ids[j] = cut_id(cand[j], a.vocab, id_bits);
            scores[j] = f32_from_bits(cut_bits(cand[j], id_bits));
          }
        }
      }
      for (int64_t j = len; j < kk; ++j) {
        ids[j] = -1;
        scores[j] = 0.0f;
      }
      a.candidate_lens[t] = static_cast<int32_t>(len);
    }
  });
}

template <typename Tag>
void sample_tokens_rows(const SampleTokensParams& a) {
  const typename Tag::T* probs = static_cast<const typename Tag::T*>(a.probs);
  const int id_bits = id_bits_for(a.vocab);
  const uint64_t all_valid = uint64_t{1} << id_bits;
  for_rows(a.rows, a.num_threads, [&](int64_t begin, int64_t end) {
    Scratch& scratch = thread_scratch();
    for (int64_t t = begin; t < end; ++t) {
      int64_t token = -1;
      int64_t b;
      if (row_request(a.batch_id_per_token_output, t, a.batch, &b)) {
        const Row<Tag> row{probs + t * a.vocab, a.vocab, id_bits};
        const RowTotals totals = row_totals(row);
        if (totals.n_valid > 0) {
          // S_k: the first top_k valid tokens, and its mass M.
          uint64_t kcut = all_valid;
          int64_t mass_k = totals.mass;
          if (topk_limits(a.top_k[b], a.vocab, totals.n_valid)) {
            const SelectResult r = radix_select(row, all_valid, a.top_k[b], false, scratch);
            kcut = r.cut;
            mass_k = r.mass_upto;
          }
          // S: the top-p prefix of S_k (M == 0: threshold 0, the first element).
          const int64_t thr = topp_threshold(mass_k, a.top_p[b]);
          const SelectResult r = radix_select(row, kcut, thr > 0 ? thr : 1, thr > 0, scratch);
          const uint64_t cut = r.cut;
          const int64_t mass_s = r.mass_upto;
          if (mass_s == 0) {
            // Only happens with a single-element S; its smallest id is the element.
            token = cut_id(cut, a.vocab, id_bits);
          } else {
            const uint64_t point =
                draw_point(rand64(a.seed[b], row_position(a.step_idx, a.cu_seqlens_q_output, b, t),
                                  kStreamTarget),
                           mass_s);
            uint64_t cum = 0;
            for (int64_t i = 0; i < a.vocab; ++i) {
              const uint64_t c = row.combined(i);
              if (c >= cut) {
                cum += static_cast<uint64_t>(mass_of_bits(cut_bits(c, id_bits)));
                if (cum > point) {
                  token = i;
                  break;
                }
              }
            }
          }
        }
      }
      a.tokens[t] = token;
    }
  });
}

}  // namespace

int top_p_candidates_cpu(const TopPCandidatesParams& a) {
  if (check_sampling_sizes(a.rows, a.vocab, a.batch, a.probs_dtype) != kOk) return kInvalidArgument;
  if (a.max_candidate_len < 1 || a.max_candidate_len > kMaxCandidateLen || a.max_candidate_len > a.vocab) {
    return kInvalidArgument;
  }
  switch (a.probs_dtype) {
    case kProbF32: top_p_candidates_rows<F32Tag>(a); break;
    case kProbF16: top_p_candidates_rows<F16Tag>(a); break;
    default: top_p_candidates_rows<BF16Tag>(a); break;
  }
  return kOk;
}

int sample_tokens_cpu(const SampleTokensParams& a) {
  if (check_sampling_sizes(a.rows, a.vocab, a.batch, a.probs_dtype) != kOk) return kInvalidArgument;
  switch (a.probs_dtype) {
    case kProbF32: sample_tokens_rows<F32Tag>(a); break;
    case kProbF16: sample_tokens_rows<F16Tag>(a); break;
    default: sample_tokens_rows<BF16Tag>(a); break;
  }
  return kOk;
}

}  // namespace fastspec

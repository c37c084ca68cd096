// top_p_candidates, sample_tokens and top_k_top_p_probs on the CPU
// (docs/ops/sampling.md): threads across rows, a row computed by one thread,
// so results do not depend on the thread count. A row: one pass for its totals
// and chunk maxima, a gather of the keys at or above a bound that provably
// holds the answer, exact radix selects over that list (sampling_select.h),
// then the op's output; near-flat rows take sampling_flat.h. Every decision is
// on integers; the row passes have AVX2 / AVX-512 versions (sampling_passes.h).
#include <algorithm>
#include <cstdint>
#include <memory>

#include "fastspec/parallel.h"
#include "fastspec/prob_dtype.h"
#include "fastspec/sampling.h"
#include "sampling_flat.h"
#include "sampling_passes.h"
#include "sampling_row.h"
#include "sampling_select.h"

namespace fastspec {
namespace {

constexpr int64_t kMinChunks = 256;   // chunks for a mass target
constexpr int64_t kMaxChunks = 8192;  // count targets above this take the histogram path
constexpr int64_t kMinChunkEntries = 32;  // a chunk spans at least two AVX-512 loads where the row allows

// Chunks of a row's totals pass: `want` of them for a count bound, else kMinChunks,
// but no more than the row fills with kMinChunkEntries (256 chunks of a short
// row would each be a scalar tail). Fewer chunks only loosen the bounds; the
// selects stay exact.
inline int64_t chunks_for(int64_t vocab, int64_t want) {
  const int64_t filled = std::max<int64_t>(1, std::min(kMinChunks, vocab / kMinChunkEntries));
  return std::min(vocab, std::max(want, filled));
}

// A thread's share of a call reads at least this many entries (2 MB of float32): waking a
// worker costs more than reading a few thousand floats, so a decode batch of
// small rows stays on the calling thread.
constexpr int64_t kMinEntriesPerChunk = int64_t{1} << 19;

// Rows [0, rows) in chunks, each with its own scratch; inline when
// num_threads == 1 or the rows are too few to pay for a wake-up (the results
// are the same either way).
template <typename Fn>
void for_rows(int64_t rows, int64_t vocab, int32_t num_threads, const Fn& fn) {
  const auto chunk = [&fn](int64_t begin, int64_t end) {
    // One scratch per thread, kept across calls: its buffers stay mapped
    // (a fresh 2 x V x 8-byte buffer per call costs page faults).
    static thread_local std::unique_ptr<Scratch> cache;
    if (!cache) cache = std::make_unique<Scratch>();
    Scratch& scratch = *cache;
    for (int64_t t = begin; t < end; ++t) fn(t, scratch);
  };
  const int64_t rows_worth_a_thread = std::max<int64_t>(1, kMinEntriesPerChunk / std::max<int64_t>(vocab, 1));
  const int64_t grain = std::max(rows_worth_a_thread, rows / (4 * fastspec::num_threads()));
  if (num_threads == 1 || rows <= grain) {
    if (rows > 0) chunk(0, rows);
    return;
  }
  parallel_for(rows, grain, chunk);
}

constexpr int64_t kSortDirectly = 4096;  // gathered lists up to this size are just sorted

// min_p's floor (sampling.h minp_floor) of a row whose totals and chunk maxima
// are known: 1 unless min_p drops a valid entry (the floor lies above the
// row's smallest valid key); then the row is its keys >= the floor, gathered.
inline uint32_t row_minp_floor(float min_p, const RowTotals& totals, const uint32_t* maxima, int64_t chunks) {
  if (totals.n_valid == 0 || !minp_active(min_p)) return 1u;
  const uint32_t floor = minp_floor(*std::max_element(maxima, maxima + chunks), min_p);
  return floor > totals.min_key ? floor : 1u;
}

template <typename Tag>
void top_p_candidates_rows(const TopPCandidatesParams& a) {
  const auto* probs = static_cast<const typename Tag::T*>(a.probs);
  const int64_t kk = a.max_candidate_len;
  const int id_bits = id_bits_for(a.vocab);
  for_rows(a.rows, a.vocab, a.num_threads, [&](int64_t t, Scratch& s) {
    int64_t* ids = a.candidate_ids + t * kk;
    float* scores = a.candidate_scores + t * kk;
    int64_t len = 0;
    int64_t b;
    if (row_request(a.batch_id_per_token_output, t, a.batch, &b)) {
      const Row<Tag> row{probs + t * a.vocab, a.vocab, id_bits};
      const int64_t chunks = chunks_for(a.vocab, kk);
      RowTotals totals = totals_and_bound(row, chunks, s.chunk_max);
      const uint32_t floor = row_minp_floor(min_p_of(a.min_p, b), totals, s.chunk_max, chunks);
      if (totals.n_valid > 0) {
        int64_t n;
        RadixStart level0;
        const RadixStart* start = nullptr;
        if (floor > 1) {  // min_p cuts: the row is the keys it keeps, its totals theirs
          n = gather_above(row, floor, s, &totals.mass);
          totals.n_valid = n;
        }
        const int64_t want = std::min(kk, totals.n_valid);
        if (floor == 1) {
          const uint32_t tau = bound_for_count(s.chunk_max, chunks, want);
          if (tau > 0) {  // at least `want` entries are >= tau
            int64_t unused;
            n = gather_above(row, tau, s, &unused);
          } else {        // no bound (too few chunks hold a valid entry): histogram path
            row_pass(row, s);
            const Level0 l0 = walk_level0(s.count[0], s.mass[0], want);
            level0 = after_level0(l0, id_bits);
            start = &level0;
            n = gather(row, l0.bucket, s);
          }
        }
        uint64_t* keys = s.gathered.data();
        if (n > kSortDirectly) {  // select the K'-th, keep what is at or above it
          const uint64_t cut = radix_select(keys, n, id_bits, 0, want, false, s, start).cut;
          int64_t m = 0;
          for (int64_t j = 0; j < n; ++j) {
            if (keys[j] >= cut) keys[m++] = keys[j];
          }
        }
        std::partial_sort(keys, keys + want, keys + std::min(n, n > kSortDirectly ? want : n),
                          [](uint64_t x, uint64_t y) { return x > y; });
        const int64_t thr = topp_threshold(totals.mass, a.top_p[b]);
        int64_t cum = 0;
        len = want;
        for (int64_t j = 0; j < want; ++j) {
          cum += mass_of_bits(cut_bits(keys[j], id_bits));
          if (cum >= thr) {
            len = j + 1;
            break;
          }
        }
        for (int64_t j = 0; j < len; ++j) {
          ids[j] = cut_id(keys[j], a.vocab, id_bits);
          scores[j] = f32_from_bits(cut_bits(keys[j], id_bits));
        }
      }
    }
    for (int64_t j = len; j < kk; ++j) {
      ids[j] = -1;
      scores[j] = 0.0f;
    }
    a.candidate_lens[t] = static_cast<int32_t>(len);
  });
}

// The CPU's select for sample_set (sampling.h), one per row. The first call
// (top-k by count, or top-p by mass over the whole row) gathers the row's keys
// down to a chunk-maxima bound that provably holds the answer (count) or,
// proven or checked, holds it (mass); otherwise level 0 comes from the row
// histograms and the gather stops at its bucket; a near-flat row whose top-p
// set reaches below every chunk maximum takes flat_select instead. A second
// call (top-p within S_k) selects among the gathered keys.
template <typename Tag>
struct RowSelect {
  const Row<Tag>& row;
  Scratch& s;
  int64_t chunks = 0;
  bool fast = false;
  RowTotals totals{};
  int64_t n = 0;       // keys gathered, ids ascending: S lies among them (unless flat)
  bool flat = false;   // S = the bucket's gathered keys >= its cut and every key >= bucket.btop
  FlatBucket bucket{};
  bool first = true;
  uint32_t floor = 1;  // min_p's (row_minp_floor); above 1: the kept keys are gathered, totals theirs
  bool draws = true;   // a draw from S follows (sample_tokens): a flat row keeps its block masses

  // The row's totals and chunk maxima, with as many chunks as top_k needs for its bound.
  // A row whose S is the whole row unless min_p cuts (top_k does not limit, top_p 1)
  // needs no bound: its totals come from one chunk, and a select it may still need
  // (every mass rounds to 0) takes the histogram path.
  RowSelect(const Row<Tag>& r, int32_t top_k, float top_p, float min_p, Scratch& scratch) : row(r), s(scratch) {
    const bool may_limit = top_k > 0 && top_k < row.vocab;
    chunks = chunks_for(row.vocab, may_limit ? top_k : 0);
    fast = chunks <= kMaxChunks && (may_limit || top_p < 1.0f);
    if (!fast) chunks = may_limit ? chunks_for(row.vocab, 0) : 1;  // totals only
    totals = totals_and_bound(row, chunks, s.chunk_max);
    floor = row_minp_floor(min_p, totals, s.chunk_max, chunks);
    if (floor > 1) {  // every select runs on the gathered keys min_p keeps
      n = gather_above(row, floor, s, &totals.mass);
      totals.n_valid = n;
      totals.min_key = floor;
      first = false;
    }
  }

  SelectResult operator()(uint64_t lower, int64_t target, bool by_mass) {
    if (!first) return radix_select(s.gathered.data(), n, row.id_bits, lower, target, by_mass, s);
    first = false;
    n = -1;
    if (fast) {
      bool proven = true;
      const uint32_t tau =
          by_mass ? bound_for_mass(s.chunk_max, chunks, target, &proven) : bound_for_count(s.chunk_max, chunks, target);
      // S not proven above tau, in a flat row (largest entry < 4x the mean)
      // or one whose sample shows too little mass above tau: S reaches below
      // tau, skip the gather that would fail.
      const bool near_flat = by_mass && !proven &&
                             (static_cast<double>(mass_of_bits(s.chunk_max[0])) * static_cast<double>(totals.n_valid) <
                                  4.0 * static_cast<double>(totals.mass) ||
                              gather_hopeless(row, tau, target, totals.mass));
      if (tau > 0 && !near_flat) {
        int64_t gmass;
        n = gather_above(row, tau, s, &gmass);
        if (by_mass && gmass < target) n = -1;  // S reaches below tau
      }
    }
    if (n < 0 && by_mass) {  // S reaches below every chunk maximum: a near-flat row
      flat = true;
      const uint32_t max_key = *std::max_element(s.chunk_max, s.chunk_max + chunks);
      return flat_select(row, totals.min_key, max_key, totals.mass, target, draws, s, &bucket);
    }
    if (n >= 0) return radix_select(s.gathered.data(), n, row.id_bits, lower, target, by_mass, s);
    row_pass(row, s);
    const Level0 l0 = walk_level0(by_mass ? s.mass[0] : s.count[0], s.mass[0], target);
    return gather_and_select(row, l0, target, by_mass, s, &n);
  }
};

// S of a row with a valid entry (sampling.h sample_set), through the CPU's select.
template <typename Tag>
SelectResult row_sample_set(RowSelect<Tag>& select, int32_t top_k, float top_p) {
  return sample_set(top_k, top_p, select.row.vocab, select.totals.n_valid, select.totals.mass, select.row.id_bits,
                    select.floor, select);
}

// S is every entry with mass when min_p cuts nothing, top_k does not limit and
// the top-p threshold is the whole mass (top_p 1): S's smallest member is the
// smallest entry with mass, so what lies below it has none. No select then: a
// draw is the first id whose cumulative mass passes the point, and every valid
// entry keeps kept_probability of its own mass (0 for none), the bits the
// select's path gives.
template <typename Tag>
bool whole_row(int32_t top_k, float top_p, const RowSelect<Tag>& select) {
  const RowTotals& totals = select.totals;
  return select.floor == 1 && totals.mass > 0 && !topk_limits(top_k, select.row.vocab, totals.n_valid) &&
         topp_threshold(totals.mass, top_p) == totals.mass;
}

// Entries draw_whole_row sums at once (with the totals pass's SIMD) before it walks them one by one.
constexpr int64_t kWholeRowBlock = 64;

template <typename Tag>
int64_t draw_whole_row(const Row<Tag>& row, uint64_t point) {
  // Whole blocks while the cumulative mass stays at or below the point (exact
  // integer sums), then the block that holds the draw entry by entry.
  uint64_t cum = 0;
  int64_t begin = 0;
  uint32_t unused_max;
  for (; begin + kWholeRowBlock < row.vocab; begin += kWholeRowBlock) {
    const Row<Tag> block{row.p + begin, kWholeRowBlock, row.id_bits};
    const uint64_t mass = static_cast<uint64_t>(totals_and_bound(block, 1, &unused_max).mass);
    if (cum + mass > point) break;
    cum += mass;
  }
  for (int64_t i = begin; i < row.vocab; ++i) {  // ids ascending; an invalid entry has no mass
    cum += static_cast<uint64_t>(mass_of_bits(row.key(i)));
    if (cum > point) return i;
  }
  return -1;  // unreachable: the row's mass exceeds the point
}

template <typename Tag>
void sample_tokens_rows(const SampleTokensParams& a) {
  const auto* probs = static_cast<const typename Tag::T*>(a.probs);
  const int id_bits = id_bits_for(a.vocab);
  for_rows(a.rows, a.vocab, a.num_threads, [&](int64_t t, Scratch& s) {
    int64_t token = -1;
    int64_t b;
    if (row_request(a.batch_id_per_token_output, t, a.batch, &b)) {
      const Row<Tag> row{probs + t * a.vocab, a.vocab, id_bits};
      RowSelect<Tag> select(row, a.top_k[b], a.top_p[b], min_p_of(a.min_p, b), s);
      if (whole_row(a.top_k[b], a.top_p[b], select)) {
        const uint64_t point =
            draw_point(rand64(a.seed[b], row_position(a.step_idx, a.cu_seqlens_q_output, b, t), a.rand_stream),
                       select.totals.mass);
        token = draw_whole_row(row, point);
      } else if (select.totals.n_valid > 0) {
        const SelectResult r = row_sample_set(select, a.top_k[b], a.top_p[b]);
        if (r.mass_upto == 0) {
          token = cut_id(r.cut, a.vocab, id_bits);  // S is that single element
        } else {
          const uint64_t point = draw_point(
              rand64(a.seed[b], row_position(a.step_idx, a.cu_seqlens_q_output, b, t), a.rand_stream), r.mass_upto);
          if (select.flat) {
            token = flat_draw(row, select.bucket, r.cut, point, s);
          } else {
            const uint64_t* keys = s.gathered.data();
            uint64_t cum = 0;
            for (int64_t j = 0; j < select.n; ++j) {  // ids ascending
              if (keys[j] < r.cut) continue;
              cum += static_cast<uint64_t>(mass_of_bits(cut_bits(keys[j], id_bits)));
              if (cum > point) {
                token = cut_id(keys[j], a.vocab, id_bits);
                break;
              }
            }
          }
        }
      }
    }
    a.tokens[t] = token;
  });
}

// Each row: zeros, then every member of S gets kept_probability of its mass.
// S lies among the gathered keys, so only those are written again; a near-flat
// row's S is most of the row, written in one pass.
template <typename Tag>
void top_k_top_p_probs_rows(const TopKTopPProbsParams& a) {
  const auto* probs = static_cast<const typename Tag::T*>(a.probs);
  const int id_bits = id_bits_for(a.vocab);
  for_rows(a.rows, a.vocab, a.num_threads, [&](int64_t t, Scratch& s) {
    float* out = a.target_probs + t * a.vocab;
    int64_t b;
    if (!row_request(a.batch_id_per_token_output, t, a.batch, &b)) {
      std::fill(out, out + a.vocab, 0.0f);
      return;
    }
    const Row<Tag> row{probs + t * a.vocab, a.vocab, id_bits};
    RowSelect<Tag> select(row, a.top_k[b], a.top_p[b], min_p_of(a.min_p, b), s);
    select.draws = false;
    if (select.totals.n_valid == 0) {
      std::fill(out, out + a.vocab, 0.0f);
      return;
    }
    if (whole_row(a.top_k[b], a.top_p[b], select)) {
      write_kept(row, uint64_t{1} << id_bits, select.totals.mass, out);  // every valid key is >= 1
      return;
    }
    const SelectResult r = row_sample_set(select, a.top_k[b], a.top_p[b]);
    if (select.flat) {
      write_kept(row, r.cut, r.mass_upto, out);
      return;
    }
    std::fill(out, out + a.vocab, 0.0f);
    const uint64_t* keys = s.gathered.data();
    for (int64_t j = 0; j < select.n; ++j) {
      if (keys[j] >= r.cut) {
        const int64_t mass = mass_of_bits(cut_bits(keys[j], id_bits));
        out[cut_id(keys[j], a.vocab, id_bits)] = kept_probability(mass, r.mass_upto);
      }
    }
  });
}

}  // namespace

int top_p_candidates_cpu(const TopPCandidatesParams& a) {
  if (check_sampling_sizes(a.rows, a.vocab, a.batch, a.probs_dtype) != kOk) return kInvalidArgument;
  if (a.max_candidate_len < 1 || a.max_candidate_len > kMaxCandidateLen || a.max_candidate_len > a.vocab) {
    return kInvalidArgument;
  }
  with_prob_tag(a.probs_dtype, [&a](auto tag) { top_p_candidates_rows<decltype(tag)>(a); });
  return kOk;
}

int sample_tokens_cpu(const SampleTokensParams& a) {
  if (check_sampling_sizes(a.rows, a.vocab, a.batch, a.probs_dtype) != kOk) return kInvalidArgument;
  if (!sample_stream_ok(a.rand_stream)) return kInvalidArgument;
  with_prob_tag(a.probs_dtype, [&a](auto tag) { sample_tokens_rows<decltype(tag)>(a); });
  return kOk;
}

int top_k_top_p_probs_cpu(const TopKTopPProbsParams& a) {
  if (check_sampling_sizes(a.rows, a.vocab, a.batch, a.probs_dtype) != kOk) return kInvalidArgument;
  with_prob_tag(a.probs_dtype, [&a](auto tag) { top_k_top_p_probs_rows<decltype(tag)>(a); });
  return kOk;
}

}  // namespace fastspec

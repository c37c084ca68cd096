// top_p_candidates, sample_tokens and top_k_top_p_probs on the CPU: threads
// across rows (the project's pool, fastspec/parallel.h); a row is computed by
// one thread, so the results do not depend on the thread count. Within a row
// (the keys and cuts of fastspec/sampling.h):
//   1. one pass over the row: number of valid entries, their total mass, and
//      count/mass histograms of the top 11 bits of the f32 key (key >> 20);
//   2. from the histograms, the lowest bucket the answer can reach (top-K',
//      top-k by count, top-p by mass); one pass gathers the combined keys of
//      every valid entry at or above it, in id order: usually a few hundred
//      entries, the whole row only for near-flat rows;
//   3. exact radix selects over that gathered list find the cuts, then
//      top_p_candidates sorts only its <= K' survivors, sample_tokens draws
//      in one pass over the gathered list (ids ascending) and
//      top_k_top_p_probs zeroes its output row and writes S's members.
// sample_tokens and top_k_top_p_probs find the same set S (sampling.h
// sample_set, through RowSelect below). On a near-flat row (S is most of the
// row, top-p only) its cut comes from the bottom of a histogram fitted to the
// row instead ("near-flat rows" below): no copy of the row, the draw scans one
// block of ids and top_k_top_p_probs writes the row in one pass.
// Nothing is sorted beyond the survivors; every decision is on integers.
//
// The row passes come in a portable version and, on x86, an AVX-512 version
// (16 keys at a time, the same integers) and an AVX2 version of the totals and
// the gather (8 keys at a time); the AVX-512 one runs where the CPU has
// AVX-512 F and DQ, the AVX2 one where it has AVX2 only, as FASTSPEC_SIMD
// allows (fastspec/cpu_features.h).
#include <algorithm>
#include <functional>
#include <cstdint>
#include <memory>
#include <vector>

#include "fastspec/cpu_features.h"
#include "fastspec/parallel.h"
#include "fastspec/sampling.h"

#if FASTSPEC_X86
#include <immintrin.h>
#endif

namespace fastspec {
namespace {

constexpr int kTopShift = 20;  // key >> 20: the top 11 of the key's 31 bits

// Scratch of one thread (heap, reused across rows and calls).
struct Scratch {
  int64_t count[2][kRadixBuckets];  // two copies: consecutive entries rarely share a chain
  int64_t mass[2][kRadixBuckets];
  int64_t hcount[2][kRadixBuckets];  // two copies again, merged after the pass
  int64_t hmass[2][kRadixBuckets];
  int64_t hlast[kRadixBuckets];
  std::vector<uint64_t> gathered;   // combined keys at or above the bound, ids ascending
  std::vector<uint64_t> work;       // radix compaction
  std::vector<int64_t> block_mass;  // flat path: mass per kDrawBlock ids above the straddling bucket
  uint32_t chunk_max[8192];         // kMaxChunks
};

template <typename Tag>
struct Row {
  const typename Tag::T* p;
  int64_t vocab;
  int id_bits;
  uint32_t key(int64_t i) const { return key_of(Tag{}, p, i); }
};

struct RowTotals {
  int64_t n_valid;
  int64_t mass;
  uint32_t min_key = 0;  // smallest valid key (totals_and_bound only; 0 without one)
};

// Pass 1: totals and the level-0 histograms (count and mass per key >> 20).
template <typename Tag>
RowTotals row_pass(const Row<Tag>& row, Scratch& s) {
  std::fill(&s.count[0][0], &s.count[0][0] + 2 * kRadixBuckets, 0);
  std::fill(&s.mass[0][0], &s.mass[0][0] + 2 * kRadixBuckets, 0);
  int64_t n = 0;
  int64_t i = 0;
  for (; i + 2 <= row.vocab; i += 2) {
    const uint32_t k0 = row.key(i), k1 = row.key(i + 1);
    n += (k0 != 0) + (k1 != 0);
    s.count[0][k0 >> kTopShift] += 1;
    s.mass[0][k0 >> kTopShift] += mass_of_bits(k0);
    s.count[1][k1 >> kTopShift] += 1;
    s.mass[1][k1 >> kTopShift] += mass_of_bits(k1);
  }
  for (; i < row.vocab; ++i) {
    const uint32_t k = row.key(i);
    n += k != 0;
    s.count[0][k >> kTopShift] += 1;
    s.mass[0][k >> kTopShift] += mass_of_bits(k);
  }
  int64_t m = 0;
  for (int d = 0; d < kRadixBuckets; ++d) {
    s.count[0][d] += s.count[1][d];
    s.mass[0][d] += s.mass[1][d];
    m += s.mass[0][d];
  }
  s.count[0][0] -= row.vocab - n;  // invalid entries (key 0) are not elements
  return {n, m};
}

// Level 0 of a select, read off the row histograms: the highest bucket at
// which the cumulative weight from the top reaches target (0 if none), and
// the count and mass of the buckets above it.
struct Level0 {
  int bucket;
  int64_t above_w, above_mass;
};

Level0 walk_level0(const int64_t* weight, const int64_t* mass, int64_t target) {
  int64_t above_w = 0, above_mass = 0;
  for (int d = kRadixBuckets - 1; d > 0; --d) {
    if (above_w + weight[d] >= target) return {d, above_w, above_mass};
    above_w += weight[d];
    above_mass += mass[d];
  }
  return {0, above_w, above_mass};
}

// Pass 2: combined keys of the valid entries with key >> 20 >= bucket, ids ascending.
template <typename Tag>
int64_t gather(const Row<Tag>& row, int bucket, Scratch& s) {
  if (static_cast<int64_t>(s.gathered.size()) < row.vocab) s.gathered.resize(row.vocab);
  uint64_t* out = s.gathered.data();
  int64_t n = 0;
  const uint32_t lo = std::max<uint32_t>(1u, static_cast<uint32_t>(bucket) << kTopShift);
  for (int64_t i = 0; i < row.vocab; ++i) {
    const uint32_t k = row.key(i);
    if (k >= lo) out[n++] = combined_key(k, i, row.vocab, row.id_bits);
  }
  return n;
}

// Where a select stands after its first levels: the chosen high bits (in
// place), how many bits they are, and the count and mass above them.
struct RadixStart {
  uint64_t prefix;
  int done;
  int64_t above_w, above_mass;
};

RadixStart after_level0(const Level0& l0, int id_bits) {
  return {static_cast<uint64_t>(l0.bucket) << (combined_width(id_bits) - kRadixBits), kRadixBits, l0.above_w,
          l0.above_mass};
}

// Merges the two histogram copies and walks the buckets from the top until
// the weight reaches target; returns the bucket, updating the weights above.
int walk_buckets(Scratch& s, int buckets, bool by_mass, int64_t target, int64_t* above_w, int64_t* above_mass) {
  for (int e = 0; e < buckets; ++e) {
    s.hcount[0][e] += s.hcount[1][e];
    s.hmass[0][e] += s.hmass[1][e];
  }
  int d = buckets - 1;
  for (;; --d) {
    const int64_t w = by_mass ? s.hmass[0][d] : s.hcount[0][d];
    if (*above_w + w >= target || d == 0) break;
    *above_w += w;
    *above_mass += s.hmass[0][d];
  }
  return d;
}

// The cut of the set {combined >= lower} within keys[0, n) where, in
// probability order, the cumulative weight (count, or mass when by_mass)
// first reaches target. Preconditions: 1 <= target <= the set's weight, and
// keys holds every element of the set down to the cut. keys is not modified.
// `start`, when given, holds the first levels already done elsewhere (same
// set, same target), so the select continues from there.
SelectResult radix_select(const uint64_t* keys, int64_t n, int id_bits, uint64_t lower, int64_t target,
                          bool by_mass, Scratch& s, const RadixStart* start = nullptr) {
  const int width = combined_width(id_bits);
  RadixStart st = start != nullptr ? *start : RadixStart{0, 0, 0, 0};
  const uint64_t* src = keys;
  int64_t n_src = n;
  if (static_cast<int64_t>(s.work.size()) < n) s.work.resize(n);
  for (;;) {
    const int shift = width - st.done > kRadixBits ? width - st.done - kRadixBits : 0;
    const int digits = width - st.done - shift;
    const int high = shift + digits;  // bits above `high` must equal prefix's (none at level 0)
    const int buckets = 1 << digits;
    std::fill(&s.hcount[0][0], &s.hcount[0][0] + 2 * kRadixBuckets, 0);
    std::fill(&s.hmass[0][0], &s.hmass[0][0] + 2 * kRadixBuckets, 0);
    const uint64_t mask = (uint64_t{1} << digits) - 1;
    const uint64_t want_high = st.prefix >> high;
    uint64_t* dst = s.work.data();
    int64_t n_dst = 0;
    for (int64_t j = 0; j < n_src; ++j) {
      const uint64_t c = src[j];
      if (c < lower || (c >> high) != want_high) continue;
      const uint32_t d = static_cast<uint32_t>((c >> shift) & mask);
      const int copy = static_cast<int>(n_dst & 1);
      s.hcount[copy][d] += 1;
      s.hmass[copy][d] += mass_of_bits(cut_bits(c, id_bits));
      s.hlast[d] = n_dst;
      dst[n_dst++] = c;  // compaction: the next level reads only these
    }
    src = dst;
    n_src = n_dst;
    const int d = walk_buckets(s, buckets, by_mass, target, &st.above_w, &st.above_mass);
    st.prefix |= static_cast<uint64_t>(d) << shift;
    st.done += digits;
    if (s.hcount[0][d] == 1 || shift == 0) {
      const uint64_t cut = s.hcount[0][d] == 1 ? src[s.hlast[d]] : st.prefix;
      return {cut, st.above_mass + mass_of_bits(cut_bits(cut, id_bits))};
    }
  }
}

// The histogram path's gather with level 1 of the select built in the same
// pass (for the entries of level 0's bucket); then the rest of the select.
template <typename Tag>
SelectResult gather_and_select(const Row<Tag>& row, const Level0& l0, int64_t target, bool by_mass, Scratch& s,
                               int64_t* n_out) {
  const int width = combined_width(row.id_bits);
  RadixStart st = after_level0(l0, row.id_bits);
  const int shift = width - st.done > kRadixBits ? width - st.done - kRadixBits : 0;
  const int digits = width - st.done - shift;
  const uint64_t mask = (uint64_t{1} << digits) - 1;
  std::fill(&s.hcount[0][0], &s.hcount[0][0] + 2 * kRadixBuckets, 0);
  std::fill(&s.hmass[0][0], &s.hmass[0][0] + 2 * kRadixBuckets, 0);
  if (static_cast<int64_t>(s.gathered.size()) < row.vocab) s.gathered.resize(row.vocab);
  uint64_t* out = s.gathered.data();
  int64_t n = 0;
  const uint32_t bucket = static_cast<uint32_t>(l0.bucket);
  const uint32_t lo = std::max<uint32_t>(1u, bucket << kTopShift);
  for (int64_t i = 0; i < row.vocab; ++i) {
    const uint32_t k = row.key(i);
    if (k < lo) continue;
    const uint64_t c = combined_key(k, i, row.vocab, row.id_bits);
    if ((k >> kTopShift) == bucket) {
      const uint32_t d = static_cast<uint32_t>((c >> shift) & mask);
      const int copy = static_cast<int>(n & 1);
      s.hcount[copy][d] += 1;
      s.hmass[copy][d] += mass_of_bits(k);
      s.hlast[d] = n;
    }
    out[n++] = c;
  }
  *n_out = n;
  const int d = walk_buckets(s, 1 << digits, by_mass, target, &st.above_w, &st.above_mass);
  st.prefix |= static_cast<uint64_t>(d) << shift;
  st.done += digits;
  if (s.hcount[0][d] == 1 || shift == 0) {
    const uint64_t cut = s.hcount[0][d] == 1 ? out[s.hlast[d]] : st.prefix;
    return {cut, st.above_mass + mass_of_bits(cut_bits(cut, row.id_bits))};
  }
  return radix_select(out, n, row.id_bits, 0, target, by_mass, s, &st);
}

// ---- fast path: a bound from chunk maxima ------------------------------------
//
// Split the row into C chunks and keep each chunk's maximum key. The chunk
// maxima are C distinct entries, so for the k-th largest of them, tau, at
// least k entries have key >= tau: a top-k / top-K' set (k <= C) lies at or
// above it. For a mass target, the masses of the chunk maxima >= tau are a
// lower bound of the mass at or above tau; when no tau is proven that way the
// gathered mass is checked (and the histogram path taken when it falls
// short). The passes are loops the compiler (or the AVX-512 code below)
// vectorises, except the gather's stores, which only the survivors take.

// floor(min(p, 1) * 2^40) for a key (0 for key 0): exact in double.
inline int64_t mass_fast(uint32_t key) {
  return static_cast<int64_t>(static_cast<double>(f32_from_bits(std::min(key, 0x3f800000u))) *
                              1099511627776.0);
}

template <typename Tag>
RowTotals totals_and_bound_scalar(const Row<Tag>& row, int64_t chunks, uint32_t* maxima) {
  int64_t n = 0, m = 0;
  uint32_t mn = 0xffffffffu;
  const int64_t size = row.vocab / chunks;  // the last chunk takes the remainder
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = c * size, end = c + 1 == chunks ? row.vocab : begin + size;
    uint32_t mx = 0;
    int64_t cn = 0, cm = 0;
    for (int64_t i = begin; i < end; ++i) {
      const uint32_t k = row.key(i);
      cn += k != 0;
      cm += mass_fast(k);
      mx = std::max(mx, k);
      mn = std::min(mn, k - 1u);  // invalid (0) wraps to the top
    }
    n += cn;
    m += cm;
    maxima[c] = mx;
  }
  return {n, m, mn + 1u};
}

// A gather above a bound in progress: the combined keys it took into
// s.gathered (ids ascending) and their mass. The SIMD versions hand it the
// lanes at or above the bound, and the tail they leave.
template <typename Tag>
struct Gather {
  const Row<Tag>& row;
  uint64_t* out;
  int64_t n = 0, mass = 0;

  Gather(const Row<Tag>& r, Scratch& s) : row(r) {
    if (static_cast<int64_t>(s.gathered.size()) < row.vocab) s.gathered.resize(row.vocab);
    out = s.gathered.data();
  }
  void take(int64_t i, uint32_t k) {
    out[n++] = combined_key(k, i, row.vocab, row.id_bits);
    mass += mass_of_bits(k);
  }
  void lanes(int64_t i, uint32_t hits) {  // bit j set: entry i + j is taken
    while (hits) {
      const int lane = __builtin_ctz(hits);
      hits &= hits - 1;
      take(i + lane, row.key(i + lane));
    }
  }
  // Entries [begin, V) with key >= tau, one at a time; returns the count, *mass_out their mass.
  int64_t rest(int64_t begin, uint32_t tau, int64_t* mass_out) {
    for (int64_t i = begin; i < row.vocab; ++i) {
      const uint32_t k = row.key(i);
      if (k >= tau) take(i, k);
    }
    *mass_out = mass;
    return n;
  }
};

// Combined keys of the entries with key >= tau (tau >= 1), ids ascending; their mass.
template <typename Tag>
int64_t gather_above_scalar(const Row<Tag>& row, uint32_t tau, Scratch& s, int64_t* mass) {
  return Gather<Tag>(row, s).rest(0, tau, mass);
}

// Count target 1 <= k <= chunks: the k-th largest chunk maximum (0: no bound).
uint32_t bound_for_count(uint32_t* maxima, int64_t chunks, int64_t k) {
  std::nth_element(maxima, maxima + (k - 1), maxima + chunks, std::greater<uint32_t>());
  return maxima[k - 1];
}

// Mass target thr >= 1: the largest chunk maximum whose predecessors in
// descending order and itself carry mass >= thr (*proven); otherwise the
// smallest nonzero maximum (not proven: the caller checks the gathered mass).
uint32_t bound_for_mass(uint32_t* maxima, int64_t chunks, int64_t thr, bool* proven) {
  std::sort(maxima, maxima + chunks, std::greater<uint32_t>());
  int64_t cum = 0;
  uint32_t last = 0;
  for (int64_t j = 0; j < chunks && maxima[j] != 0; ++j) {
    last = maxima[j];
    cum += mass_of_bits(last);
    if (cum >= thr) {
      *proven = true;
      return last;
    }
  }
  *proven = false;
  return last;
}

#if FASTSPEC_X86
// float32, float16 and bfloat16 rows with AVX-512: 16 keys at a time, the same
// integers as above (bf16 bits << 16 are its f32 bits; fp16 as f16_to_f32_bits).
// Every function that uses AVX-512 carries FS_TARGET_AVX512.
FS_TARGET_AVX512 inline __m512i f32_bits16(F32Tag, const float* p) { return _mm512_loadu_si512(p); }
FS_TARGET_AVX512 inline __m512i f32_bits16(BF16Tag, const uint16_t* p) {
  return _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16);
}

FS_TARGET_AVX512 inline __m512i f32_bits16(F16Tag, const uint16_t* p) {  // f16_to_f32_bits, 16 lanes
  const __m512i h = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  const __m512i sign = _mm512_slli_epi32(_mm512_and_si512(h, _mm512_set1_epi32(0x8000)), 16);
  const __m512i exp = _mm512_and_si512(_mm512_srli_epi32(h, 10), _mm512_set1_epi32(0x1f));
  const __m512i mant = _mm512_and_si512(h, _mm512_set1_epi32(0x3ff));
  const __m512i mant13 = _mm512_slli_epi32(mant, 13);
  const __m512i normal = _mm512_or_si512(_mm512_slli_epi32(_mm512_add_epi32(exp, _mm512_set1_epi32(112)), 23), mant13);
  const __m512i infnan = _mm512_or_si512(_mm512_set1_epi32(0x7f800000), mant13);
  const __m512i sub = _mm512_castps_si512(_mm512_mul_ps(_mm512_cvtepi32_ps(mant), _mm512_set1_ps(5.9604644775390625e-08f)));
  __m512i r = _mm512_mask_mov_epi32(normal, _mm512_cmpeq_epi32_mask(exp, _mm512_setzero_si512()), sub);
  r = _mm512_mask_mov_epi32(r, _mm512_cmpeq_epi32_mask(exp, _mm512_set1_epi32(0x1f)), infnan);
  return _mm512_or_si512(r, sign);
}

template <typename Tag>
FS_TARGET_AVX512 inline __m512i keys16(const typename Tag::T* p) {
  const __m512i bits = f32_bits16(Tag{}, p);
  const __mmask16 valid = _mm512_cmplt_epu32_mask(_mm512_sub_epi32(bits, _mm512_set1_epi32(1)),
                                                  _mm512_set1_epi32(0x7f7fffff));
  return _mm512_maskz_mov_epi32(valid, bits);
}

template <typename Tag>
FS_TARGET_AVX512 RowTotals totals_and_bound_avx512(const Row<Tag>& row, int64_t chunks, uint32_t* maxima) {
  const __m512d scale = _mm512_set1_pd(1099511627776.0);
  const __m512i one_bits = _mm512_set1_epi32(0x3f800000);
  const __m512i one = _mm512_set1_epi32(1);
  int64_t n = 0;
  __m512i msum = _mm512_setzero_si512();
  __m512i vmin = _mm512_set1_epi32(-1);  // min of key - 1: invalid (0) wraps to the top
  uint32_t mn = 0xffffffffu;
  const int64_t size = row.vocab / chunks;
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = c * size, end = c + 1 == chunks ? row.vocab : begin + size;
    __m512i vmax = _mm512_setzero_si512();
    uint32_t mx = 0;
    int64_t i = begin;
    for (; i + 16 <= end; i += 16) {
      const __m512i key = keys16<Tag>(row.p + i);
      vmax = _mm512_max_epu32(vmax, key);
      vmin = _mm512_min_epu32(vmin, _mm512_sub_epi32(key, one));
      n += __builtin_popcount(_mm512_test_epi32_mask(key, key));
      const __m512 clamped = _mm512_castsi512_ps(_mm512_min_epu32(key, one_bits));
      const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(clamped));
      const __m512d hi = _mm512_cvtps_pd(_mm512_extractf32x8_ps(clamped, 1));
      msum = _mm512_add_epi64(msum, _mm512_cvttpd_epi64(_mm512_mul_pd(lo, scale)));
      msum = _mm512_add_epi64(msum, _mm512_cvttpd_epi64(_mm512_mul_pd(hi, scale)));
    }
    mx = _mm512_reduce_max_epu32(vmax);
    int64_t tail_mass = 0;
    for (; i < end; ++i) {
      const uint32_t k = row.key(i);
      n += k != 0;
      tail_mass += mass_fast(k);
      mx = std::max(mx, k);
      mn = std::min(mn, k - 1u);
    }
    msum = _mm512_add_epi64(msum, _mm512_set_epi64(0, 0, 0, 0, 0, 0, 0, tail_mass));
    maxima[c] = mx;
  }
  mn = std::min(mn, _mm512_reduce_min_epu32(vmin));
  return {n, _mm512_reduce_add_epi64(msum), mn + 1u};
}

template <typename Tag>
FS_TARGET_AVX512 int64_t gather_above_avx512(const Row<Tag>& row, uint32_t tau, Scratch& s, int64_t* mass) {
  Gather<Tag> gather(row, s);
  const __m512i vtau = _mm512_set1_epi32(static_cast<int>(tau));
  int64_t i = 0;
  for (; i + 16 <= row.vocab; i += 16) gather.lanes(i, _mm512_cmpge_epu32_mask(keys16<Tag>(row.p + i), vtau));
  return gather.rest(i, tau, mass);
}

#endif

// ---- near-flat rows: a histogram fitted to the row --------------------------
//
// When S reaches below every chunk maximum (a near-flat row, where S is most
// of the row), the level-0 histogram (key >> 20) holds nearly the whole row in
// one or two buckets and the gathers copy the whole row. Instead: a mass
// histogram over the row's own key range [min valid key, max key] in 2048
// buckets of 2^shift keys, walked from the bottom: the cut lies in the first
// bucket at which the mass from the bottom exceeds total - thr (the mass S
// leaves out, small here), so only the buckets up to there are needed (see
// flat_cut_bucket_avx512). One pass gathers that bucket's members (an exact
// select among them finds the cut) and sums, per block of kDrawBlock ids, the
// mass above the bucket; the draw then scans a single block. Every decision is
// still on the exact masses; the shortcuts only change the time.

constexpr int64_t kDrawBlock = 512;  // a multiple of 16

// hist[d] = mass of the keys in [lo + d 2^shift, lo + (d+1) 2^shift), d < 2048.
template <typename Tag>
void flat_histogram(const Row<Tag>& row, uint32_t lo, int shift, int64_t* hist) {
  std::fill(hist, hist + kRadixBuckets, 0);
  for (int64_t i = 0; i < row.vocab; ++i) {
    const uint32_t k = row.key(i);
    hist[(std::max(k, lo) - lo) >> shift] += mass_fast(k);  // invalid: bucket 0, mass 0
  }
}

// From the bottom: the first of buckets [0, limit) whose mass, added to the
// mass of the buckets below it (*below), exceeds excl; -1 if none does.
int walk_from_bottom(const int64_t* hist, int limit, int64_t excl, int64_t* below) {
  int64_t cum = 0;
  for (int d = 0; d < limit; ++d) {
    if (cum + hist[d] > excl) {
      *below = cum;
      return d;
    }
    cum += hist[d];
  }
  return -1;
}

// The bucket that straddles the cut of a row whose top-p set leaves out
// excl = total - thr: S's cut lies in the first bucket, from the bottom, at
// which the mass from the bottom exceeds excl. hist is filled for it and every
// bucket below it; *below = their mass.
template <typename Tag>
int flat_cut_bucket_scalar(const Row<Tag>& row, uint32_t lo, int shift, int64_t excl, int64_t* hist, int64_t* below) {
  flat_histogram(row, lo, shift, hist);
  return walk_from_bottom(hist, kRadixBuckets, excl, below);  // found: the buckets hold the total > excl
}

void flat_prepare(int64_t vocab, Scratch& s) {
  if (static_cast<int64_t>(s.gathered.size()) < vocab) s.gathered.resize(vocab);
  const int64_t blocks = (vocab + kDrawBlock - 1) / kDrawBlock;
  if (static_cast<int64_t>(s.block_mass.size()) < blocks) s.block_mass.resize(blocks);
}

// Combined keys of the entries with key in [blo, btop) (ids ascending) into
// s.gathered, and s.block_mass[b] = mass of the keys >= btop among ids
// [b kDrawBlock, (b+1) kDrawBlock). Returns the number gathered.
template <typename Tag>
int64_t flat_bucket_pass_scalar(const Row<Tag>& row, uint32_t blo, uint32_t btop, Scratch& s) {
  flat_prepare(row.vocab, s);
  uint64_t* out = s.gathered.data();
  int64_t n = 0;
  for (int64_t begin = 0, b = 0; begin < row.vocab; begin += kDrawBlock, ++b) {
    const int64_t end = std::min(row.vocab, begin + kDrawBlock);
    int64_t m = 0;
    for (int64_t i = begin; i < end; ++i) {
      const uint32_t k = row.key(i);
      m += k >= btop ? mass_fast(k) : 0;
      if (k >= blo && k < btop) out[n++] = combined_key(k, i, row.vocab, row.id_bits);
    }
    s.block_mass[b] = m;
  }
  return n;
}

#if FASTSPEC_X86
// The masses of 16 keys (mass_fast), lanes 0-7 and 8-15.
FS_TARGET_AVX512 inline void masses16(__m512i key, __m512i* lo, __m512i* hi) {
  const __m512d scale = _mm512_set1_pd(1099511627776.0);
  const __m512 clamped = _mm512_castsi512_ps(_mm512_min_epu32(key, _mm512_set1_epi32(0x3f800000)));
  *lo = _mm512_cvttpd_epi64(_mm512_mul_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(clamped)), scale));
  *hi = _mm512_cvttpd_epi64(_mm512_mul_pd(_mm512_cvtps_pd(_mm512_extractf32x8_ps(clamped, 1)), scale));
}

// Keys below 2^-14 (as floats) have masses below 2^26 (mass_of_bits in 32-bit
// lanes), so a 32-bit lane sums its kDrawBlock / 16 entries of a block
// without overflow.
constexpr uint32_t kSmallKeys = 0x38800000u;
static_assert(kDrawBlock / 16 * (int64_t{1} << 26) <= (int64_t{1} << 32), "block sums fit 32 bits");

FS_TARGET_AVX512 inline __m512i small_masses16(__m512i key) {  // mass_of_bits for keys < kSmallKeys
  const __m512i e = _mm512_srli_epi32(key, 23);
  const __m512i mant = _mm512_or_si512(_mm512_and_si512(key, _mm512_set1_epi32(0x7fffff)), _mm512_set1_epi32(0x800000));
  const __m512i bias = _mm512_set1_epi32(110);
  const __m512i up = _mm512_sllv_epi32(mant, _mm512_max_epi32(_mm512_sub_epi32(e, bias), _mm512_setzero_si512()));
  const __m512i m = _mm512_srlv_epi32(up, _mm512_max_epi32(_mm512_sub_epi32(bias, e), _mm512_setzero_si512()));
  return _mm512_maskz_mov_epi32(_mm512_test_epi32_mask(e, e), m);  // exponent 0 (subnormal, invalid): 0
}

// Entries [i, i + 64) whose bucket is below limit go into hist: buckets (and,
// for small keys, masses) computed and compressed by the vector unit, the adds
// in scalar (the part that costs).
template <typename Tag, bool kSmall>
FS_TARGET_AVX512 inline void flat_group(const Row<Tag>& row, int64_t i, __m512i vlo, __m128i vshift, __m512i vlimit,
                                         int64_t* hist) {
  alignas(64) uint32_t dig[64 + 16];
  alignas(64) uint32_t val[64 + 16];  // masses (kSmall) or keys
  int m = 0;
  for (int v = 0; v < 4; ++v) {
    const __m512i k = keys16<Tag>(row.p + i + 16 * v);
    const __m512i d = _mm512_srl_epi32(_mm512_sub_epi32(_mm512_max_epu32(k, vlo), vlo), vshift);  // invalid: 0
    const __mmask16 sel = _mm512_cmplt_epu32_mask(d, vlimit);
    _mm512_storeu_si512(dig + m, _mm512_maskz_compress_epi32(sel, d));
    _mm512_storeu_si512(val + m, _mm512_maskz_compress_epi32(sel, kSmall ? small_masses16(k) : k));
    m += __builtin_popcount(sel);
  }
  for (int j = 0; j < m; ++j) hist[dig[j]] += kSmall ? static_cast<int64_t>(val[j]) : mass_fast(val[j]);
}

// flat_cut_bucket_scalar's answer in two phases. Every 32nd group of 64
// entries is histogrammed in full; from that sample, a bucket limit that the
// cut very likely lies below (the bottom excl/total of the mass plus a
// margin). The rest of the row adds only its entries below the limit (a top-p
// cut lies near the bottom of a flat row). If the cut is not found below the
// limit, the full histogram is built after all: the result is the same either
// way, only the time differs.
template <typename Tag, bool kSmall>
FS_TARGET_AVX512 int flat_cut_bucket_avx512(const Row<Tag>& row, uint32_t lo, int shift, int64_t excl, int64_t total,
                                            int64_t* hist, int64_t* below) {
  std::fill(hist, hist + kRadixBuckets, 0);
  const __m512i vlo = _mm512_set1_epi32(static_cast<int>(lo));
  const __m128i vshift = _mm_cvtsi32_si128(shift);
  const int64_t groups = row.vocab / 64;
  const __m512i all = _mm512_set1_epi32(kRadixBuckets);
  for (int64_t g = 0; g < groups; g += 32) flat_group<Tag, kSmall>(row, g * 64, vlo, vshift, all, hist);
  int limit = kRadixBuckets;
  int64_t sampled = 0;
  for (int d = 0; d < kRadixBuckets; ++d) sampled += hist[d];
  const double frac = static_cast<double>(excl) / static_cast<double>(total) + 0.03;
  if (groups >= 128 && frac < 0.9) {
    const int64_t want = static_cast<int64_t>(frac * static_cast<double>(sampled));
    int64_t cum = 0;
    int d = 0;
    while (d < kRadixBuckets && cum <= want) cum += hist[d++];
    limit = std::min(kRadixBuckets, d + 8);
  }
  const __m512i vlimit = _mm512_set1_epi32(limit);
  for (int64_t g = 0; g < groups; ++g) {
    if (g % 32 != 0) flat_group<Tag, kSmall>(row, g * 64, vlo, vshift, vlimit, hist);
  }
  for (int64_t i = groups * 64; i < row.vocab; ++i) {
    const uint32_t k = row.key(i);
    const uint32_t d = (std::max(k, lo) - lo) >> shift;
    if (static_cast<int>(d) < limit) hist[d] += mass_fast(k);
  }
  const int d = walk_from_bottom(hist, limit, excl, below);
  if (d >= 0 || limit == kRadixBuckets) return d;
  // The cut lies above the limit: the rest of the histogram after all.
  const __m512i vall = _mm512_set1_epi32(kRadixBuckets);
  std::fill(hist, hist + kRadixBuckets, 0);
  for (int64_t g = 0; g < groups; ++g) flat_group<Tag, kSmall>(row, g * 64, vlo, vshift, vall, hist);
  for (int64_t i = groups * 64; i < row.vocab; ++i) {
    const uint32_t k = row.key(i);
    hist[(std::max(k, lo) - lo) >> shift] += mass_fast(k);
  }
  return walk_from_bottom(hist, kRadixBuckets, excl, below);
}

template <typename Tag>
FS_TARGET_AVX512 int64_t flat_bucket_pass_avx512(const Row<Tag>& row, uint32_t blo, uint32_t btop, uint32_t max_key,
                                                 Scratch& s) {
  flat_prepare(row.vocab, s);
  uint64_t* out = s.gathered.data();
  int64_t n = 0;
  const bool small = max_key < kSmallKeys;
  const __m512i vblo = _mm512_set1_epi32(static_cast<int>(blo));
  const __m512i vtop = _mm512_set1_epi32(static_cast<int>(btop));
  for (int64_t begin = 0, b = 0; begin < row.vocab; begin += kDrawBlock, ++b) {
    const int64_t end = std::min(row.vocab, begin + kDrawBlock);
    __m512i acc = _mm512_setzero_si512();  // 8 x int64, or 16 x uint32 when small
    int64_t i = begin;
    for (; i + 16 <= end; i += 16) {
      const __m512i key = keys16<Tag>(row.p + i);
      const __mmask16 above = _mm512_cmpge_epu32_mask(key, vtop);
      if (small) {
        acc = _mm512_mask_add_epi32(acc, above, acc, small_masses16(key));
      } else {
        __m512i mlo, mhi;
        masses16(key, &mlo, &mhi);
        acc = _mm512_mask_add_epi64(acc, static_cast<__mmask8>(above), acc, mlo);
        acc = _mm512_mask_add_epi64(acc, static_cast<__mmask8>(above >> 8), acc, mhi);
      }
      uint32_t hits = _mm512_mask_cmpge_epu32_mask(static_cast<__mmask16>(~above), key, vblo);
      while (hits) {
        const int lane = __builtin_ctz(hits);
        hits &= hits - 1;
        out[n++] = combined_key(row.key(i + lane), i + lane, row.vocab, row.id_bits);
      }
    }
    if (small) {
      acc = _mm512_add_epi64(_mm512_cvtepu32_epi64(_mm512_castsi512_si256(acc)),
                             _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(acc, 1)));
    }
    int64_t m = _mm512_reduce_add_epi64(acc);
    for (; i < end; ++i) {
      const uint32_t k = row.key(i);
      m += k >= btop ? mass_fast(k) : 0;
      if (k >= blo && k < btop) out[n++] = combined_key(k, i, row.vocab, row.id_bits);
    }
    s.block_mass[b] = m;
  }
  return n;
}

#endif

// ---- AVX2: 8 keys at a time ---------------------------------------------------
//
// The row totals and the gather above a bound for CPUs with AVX2 but not
// AVX-512, and top_k_top_p_probs' write of a near-flat row, with the integers
// of the portable loops: fp16 widened as f16_to_f32_bits, masses as exact
// doubles (mass_fast's product, truncated) summed as int64. Every function
// here carries FS_TARGET_AVX2.

#if FASTSPEC_X86
FS_TARGET_AVX2 inline __m256i f32_bits8(F32Tag, const float* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
FS_TARGET_AVX2 inline __m256i f32_bits8(BF16Tag, const uint16_t* p) {
  return _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16);
}
FS_TARGET_AVX2 inline __m256i f32_bits8(F16Tag, const uint16_t* p) {  // f16_to_f32_bits, 8 lanes
  const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(h, _mm256_set1_epi32(0x8000)), 16);
  const __m256i exp = _mm256_and_si256(_mm256_srli_epi32(h, 10), _mm256_set1_epi32(0x1f));
  const __m256i mant13 = _mm256_slli_epi32(_mm256_and_si256(h, _mm256_set1_epi32(0x3ff)), 13);
  const __m256i normal = _mm256_or_si256(_mm256_slli_epi32(_mm256_add_epi32(exp, _mm256_set1_epi32(112)), 23), mant13);
  const __m256i infnan = _mm256_or_si256(_mm256_set1_epi32(0x7f800000), mant13);
  const __m256 mant = _mm256_cvtepi32_ps(_mm256_and_si256(h, _mm256_set1_epi32(0x3ff)));
  const __m256i sub = _mm256_castps_si256(_mm256_mul_ps(mant, _mm256_set1_ps(5.9604644775390625e-08f)));
  __m256i r = _mm256_blendv_epi8(normal, sub, _mm256_cmpeq_epi32(exp, _mm256_setzero_si256()));
  r = _mm256_blendv_epi8(r, infnan, _mm256_cmpeq_epi32(exp, _mm256_set1_epi32(0x1f)));
  return _mm256_or_si256(r, sign);
}

// prob_key of 8 entries: the bits where they lie in [1, 0x7f7fffff], else 0.
template <typename Tag>
FS_TARGET_AVX2 inline __m256i keys8(const typename Tag::T* p) {
  const __m256i bits = f32_bits8(Tag{}, p);
  const __m256i valid = _mm256_and_si256(_mm256_cmpgt_epi32(bits, _mm256_setzero_si256()),  // > 0 as int32
                                         _mm256_cmpgt_epi32(_mm256_set1_epi32(0x7f800000), bits));
  return _mm256_and_si256(bits, valid);
}

// Masses of 4 keys (their f32 values clamped to 1) as exact doubles: trunc(p * 2^40).
FS_TARGET_AVX2 inline __m256d masses4(__m128 clamped) {
  const __m256d scaled = _mm256_mul_pd(_mm256_cvtps_pd(clamped), _mm256_set1_pd(1099511627776.0));
  return _mm256_round_pd(scaled, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
}

// Integer-valued doubles in [0, 2^52) as int64: added to 2^52 they sit in the low mantissa bits.
FS_TARGET_AVX2 inline __m256i doubles_to_int64(__m256d x) {
  const __m256d magic = _mm256_set1_pd(4503599627370496.0);
  return _mm256_sub_epi64(_mm256_castpd_si256(_mm256_add_pd(x, magic)), _mm256_castpd_si256(magic));
}

FS_TARGET_AVX2 inline uint32_t max_epu32(__m256i v) {
  __m128i m = _mm_max_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  m = _mm_max_epu32(m, _mm_shuffle_epi32(m, 0x4e));
  return static_cast<uint32_t>(_mm_cvtsi128_si32(_mm_max_epu32(m, _mm_shuffle_epi32(m, 0xb1))));
}
FS_TARGET_AVX2 inline uint32_t min_epu32(__m256i v) {
  __m128i m = _mm_min_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  m = _mm_min_epu32(m, _mm_shuffle_epi32(m, 0x4e));
  return static_cast<uint32_t>(_mm_cvtsi128_si32(_mm_min_epu32(m, _mm_shuffle_epi32(m, 0xb1))));
}
FS_TARGET_AVX2 inline int64_t sum_epi64(__m256i v) {
  const __m128i s = _mm_add_epi64(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  return _mm_cvtsi128_si64(_mm_add_epi64(s, _mm_unpackhi_epi64(s, s)));
}

template <typename Tag>
FS_TARGET_AVX2 RowTotals totals_and_bound_avx2(const Row<Tag>& row, int64_t chunks, uint32_t* maxima) {
  const __m256i one_bits = _mm256_set1_epi32(0x3f800000);
  const __m256i one = _mm256_set1_epi32(1);
  int64_t n = 0, tail_mass = 0;
  __m256i msum = _mm256_setzero_si256();
  __m256i vmin = _mm256_set1_epi32(-1);  // min of key - 1: invalid (0) wraps to the top
  uint32_t mn = 0xffffffffu;
  const int64_t size = row.vocab / chunks;  // the last chunk takes the remainder
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = c * size, end = c + 1 == chunks ? row.vocab : begin + size;
    __m256i vmax = _mm256_setzero_si256();
    int64_t i = begin;
    for (; i + 8 <= end; i += 8) {
      const __m256i key = keys8<Tag>(row.p + i);
      vmax = _mm256_max_epu32(vmax, key);
      vmin = _mm256_min_epu32(vmin, _mm256_sub_epi32(key, one));
      const __m256i invalid = _mm256_cmpeq_epi32(key, _mm256_setzero_si256());
      n += 8 - __builtin_popcount(static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(invalid))));
      const __m256 clamped = _mm256_castsi256_ps(_mm256_min_epu32(key, one_bits));
      msum = _mm256_add_epi64(msum, doubles_to_int64(masses4(_mm256_castps256_ps128(clamped))));
      msum = _mm256_add_epi64(msum, doubles_to_int64(masses4(_mm256_extractf128_ps(clamped, 1))));
    }
    uint32_t mx = max_epu32(vmax);
    for (; i < end; ++i) {
      const uint32_t k = row.key(i);
      n += k != 0;
      tail_mass += mass_fast(k);
      mx = std::max(mx, k);
      mn = std::min(mn, k - 1u);
    }
    maxima[c] = mx;
  }
  mn = std::min(mn, min_epu32(vmin));
  return {n, sum_epi64(msum) + tail_mass, mn + 1u};
}

template <typename Tag>
FS_TARGET_AVX2 int64_t gather_above_avx2(const Row<Tag>& row, uint32_t tau, Scratch& s, int64_t* mass) {
  Gather<Tag> gather(row, s);
  const __m256i below_tau = _mm256_set1_epi32(static_cast<int>(tau - 1));  // 1 <= tau < 2^31: signed compares
  int64_t i = 0;
  for (; i + 8 <= row.vocab; i += 8) {
    const __m256i above = _mm256_cmpgt_epi32(keys8<Tag>(row.p + i), below_tau);
    gather.lanes(i, static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(above))));
  }
  return gather.rest(i, tau, mass);
}
#endif

// ---- top_k_top_p_probs: the one-pass write of a near-flat row -------------------
//
// out[i] = kept_probability(mass, set_mass) where combined >= cut, else 0.
// Most of the row is kept, so the division dominates: the AVX2 version divides
// 4 doubles at a time; the division and the rounding to float round to nearest
// as the scalar code's do, on the same exact masses: the same bits.

template <typename Tag>
void write_kept_scalar(const Row<Tag>& row, uint64_t cut, int64_t set_mass, float* out, int64_t begin = 0) {
  for (int64_t i = begin; i < row.vocab; ++i) {
    const uint32_t k = row.key(i);
    out[i] = combined_key(k, i, row.vocab, row.id_bits) >= cut ? kept_probability(mass_of_bits(k), set_mass) : 0.0f;
  }
}

#if FASTSPEC_X86
template <typename Tag>
FS_TARGET_AVX2 void write_kept_avx2(const Row<Tag>& row, uint64_t cut, int64_t set_mass, float* out) {
  // combined >= cut <=> key > cut's key, or equal keys and id <= cut's id (keys < 2^31: signed compares)
  const __m256i cut_key = _mm256_set1_epi32(static_cast<int>(cut_bits(cut, row.id_bits)));
  const __m256i past_cut_id = _mm256_set1_epi32(static_cast<int>(cut_id(cut, row.vocab, row.id_bits) + 1));
  const __m256d total = _mm256_set1_pd(static_cast<double>(set_mass));
  const __m256i one_bits = _mm256_set1_epi32(0x3f800000);
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  int64_t i = 0;
  for (; i + 8 <= row.vocab; i += 8) {
    const __m256i key = keys8<Tag>(row.p + i);
    const __m256i ids = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(i)), lanes);  // V < 2^31
    const __m256i tie = _mm256_and_si256(_mm256_cmpeq_epi32(key, cut_key), _mm256_cmpgt_epi32(past_cut_id, ids));
    const __m256i kept = _mm256_or_si256(_mm256_cmpgt_epi32(key, cut_key), tie);
    const __m256 clamped = _mm256_castsi256_ps(_mm256_min_epu32(key, one_bits));
    const __m128 lo = _mm256_cvtpd_ps(_mm256_div_pd(masses4(_mm256_castps256_ps128(clamped)), total));
    const __m128 hi = _mm256_cvtpd_ps(_mm256_div_pd(masses4(_mm256_extractf128_ps(clamped, 1)), total));
    _mm256_storeu_ps(out + i, _mm256_and_ps(_mm256_set_m128(hi, lo), _mm256_castsi256_ps(kept)));
  }
  write_kept_scalar(row, cut, set_mass, out, i);
}
#endif

// ---- the versions for this CPU ------------------------------------------------
//
// Chosen per row: AVX-512 when simd_level() allows it, else AVX2 where there is
// an AVX2 version and simd_level() allows it, else the portable loops. All
// give the same results.

inline bool use_avx512() { return FASTSPEC_X86 && simd_level() == kSimdAvx512; }
inline bool use_avx2() { return FASTSPEC_X86 && simd_level() >= kSimdAvx2; }

template <typename Tag>
void write_kept(const Row<Tag>& row, uint64_t cut, int64_t set_mass, float* out) {
#if FASTSPEC_X86
  if (use_avx2() && set_mass > 0) return write_kept_avx2(row, cut, set_mass, out);
#endif
  write_kept_scalar(row, cut, set_mass, out);
}

template <typename Tag>
RowTotals totals_and_bound(const Row<Tag>& row, int64_t chunks, uint32_t* maxima) {
#if FASTSPEC_X86
  if (use_avx512()) return totals_and_bound_avx512(row, chunks, maxima);
  if (use_avx2()) return totals_and_bound_avx2(row, chunks, maxima);
#endif
  return totals_and_bound_scalar(row, chunks, maxima);
}

template <typename Tag>
int64_t gather_above(const Row<Tag>& row, uint32_t tau, Scratch& s, int64_t* mass) {
#if FASTSPEC_X86
  if (use_avx512()) return gather_above_avx512(row, tau, s, mass);
  if (use_avx2()) return gather_above_avx2(row, tau, s, mass);
#endif
  return gather_above_scalar(row, tau, s, mass);
}

// The bucket that straddles the cut (see flat_cut_bucket_scalar).
template <typename Tag>
int flat_cut_bucket(const Row<Tag>& row, uint32_t lo, uint32_t max_key, int shift, int64_t excl, int64_t total,
                    int64_t* hist, int64_t* below) {
#if FASTSPEC_X86
  if (use_avx512()) {
    return max_key < kSmallKeys ? flat_cut_bucket_avx512<Tag, true>(row, lo, shift, excl, total, hist, below)
                                : flat_cut_bucket_avx512<Tag, false>(row, lo, shift, excl, total, hist, below);
  }
#endif
  return flat_cut_bucket_scalar(row, lo, shift, excl, hist, below);
}

template <typename Tag>
int64_t flat_bucket_pass(const Row<Tag>& row, uint32_t blo, uint32_t btop, uint32_t max_key, Scratch& s) {
#if FASTSPEC_X86
  if (use_avx512()) return flat_bucket_pass_avx512(row, blo, btop, max_key, s);
#endif
  return flat_bucket_pass_scalar(row, blo, btop, s);
}

constexpr int64_t kFlatSortDirectly = 2048;  // straddling buckets up to this size are sorted

// radix_select(keys, n, ..., 0, target, by mass) for a small list: sort a copy.
SelectResult select_by_mass(const uint64_t* keys, int64_t n, int id_bits, int64_t target, Scratch& s) {
  if (n > kFlatSortDirectly) return radix_select(keys, n, id_bits, 0, target, true, s);
  if (static_cast<int64_t>(s.work.size()) < n) s.work.resize(n);
  uint64_t* w = s.work.data();
  std::copy(keys, keys + n, w);
  std::sort(w, w + n, std::greater<uint64_t>());
  int64_t cum = 0;
  for (int64_t j = 0; j < n; ++j) {
    cum += mass_of_bits(cut_bits(w[j], id_bits));
    if (cum >= target) return {w[j], cum};
  }
  return {w[n - 1], cum};  // unreachable: target <= the list's mass
}

// Where a near-flat row's set S lies after flat_select: the gathered members
// of the bucket that straddles the cut, [blo, btop), and every key >= btop
// (their mass per kDrawBlock ids in s.block_mass).
struct FlatBucket {
  uint32_t blo, btop;
  int64_t n;  // bucket keys gathered (ids ascending)
};

// S's cut and mass for a by-mass row (top-p threshold 1 <= thr <= total over
// every valid entry, keys in [lo, max_key]).
template <typename Tag>
SelectResult flat_select(const Row<Tag>& row, uint32_t lo, uint32_t max_key, int64_t total, int64_t thr,
                         Scratch& s, FlatBucket* bucket) {
  int shift = 0;
  while (((max_key - lo) >> shift) >= static_cast<uint32_t>(kRadixBuckets)) ++shift;
  int64_t* hist = s.mass[0];
  int64_t below = 0;
  // The cut from the bottom: S leaves out less than total - thr + 1.
  const int d = flat_cut_bucket(row, lo, max_key, shift, total - thr, total, hist, &below);
  const int64_t above = total - below - hist[d];  // mass of the buckets above d
  bucket->blo = lo + (static_cast<uint32_t>(d) << shift);
  bucket->btop = lo + (static_cast<uint32_t>(d + 1) << shift);  // max key < 2^31: no overflow
  bucket->n = flat_bucket_pass(row, bucket->blo, bucket->btop, max_key, s);
  // 1 <= thr - above <= hist[d], the mass of the gathered bucket.
  const SelectResult r = select_by_mass(s.gathered.data(), bucket->n, row.id_bits, thr - above, s);
  return {r.cut, above + r.mass_upto};
}

// The token a draw point (< S's mass) lands on, S as flat_select left it:
// the block masses tell the one block of ids to scan.
template <typename Tag>
int64_t flat_draw(const Row<Tag>& row, const FlatBucket& bucket, uint64_t cut, uint64_t point, Scratch& s) {
  const uint64_t* keys = s.gathered.data();
  int64_t* block = s.block_mass.data();
  for (int64_t j = 0; j < bucket.n; ++j) {  // the bucket's members of S join their blocks
    if (keys[j] >= cut) {
      block[cut_id(keys[j], row.vocab, row.id_bits) / kDrawBlock] += mass_of_bits(cut_bits(keys[j], row.id_bits));
    }
  }
  uint64_t cum = 0;
  for (int64_t begin = 0, b = 0; begin < row.vocab; begin += kDrawBlock, ++b) {
    if (cum + static_cast<uint64_t>(block[b]) <= point) {
      cum += static_cast<uint64_t>(block[b]);
      continue;
    }
    const int64_t end = std::min(row.vocab, begin + kDrawBlock);
    for (int64_t i = begin; i < end; ++i) {  // ids ascending within the block
      const uint32_t k = row.key(i);
      if (k >= bucket.blo && combined_key(k, i, row.vocab, row.id_bits) >= cut) {
        cum += static_cast<uint64_t>(mass_of_bits(k));
        if (cum > point) return i;
      }
    }
    break;  // unreachable: the block's mass exceeds the point
  }
  return -1;
}

constexpr int64_t kMinChunks = 256;   // chunks for a mass target
constexpr int64_t kMaxChunks = 8192;  // count targets above this take the histogram path

// Rows [0, rows) in chunks, each with its own scratch; inline when
// num_threads == 1 (the results are the same either way).
template <typename Fn>
void for_rows(int64_t rows, int32_t num_threads, const Fn& fn) {
  const auto chunk = [&fn](int64_t begin, int64_t end) {
    // One scratch per thread, kept across calls: its buffers stay mapped
    // (a fresh 2 x V x 8-byte buffer per call costs page faults).
    static thread_local std::unique_ptr<Scratch> cache;
    if (!cache) cache = std::make_unique<Scratch>();
    Scratch& scratch = *cache;
    for (int64_t t = begin; t < end; ++t) fn(t, scratch);
  };
  if (num_threads == 1 || rows <= 1) {
    if (rows > 0) chunk(0, rows);
    return;
  }
  parallel_for(rows, std::max<int64_t>(1, rows / (4 * fastspec::num_threads())), chunk);
}

constexpr int64_t kSortDirectly = 4096;  // gathered lists up to this size are just sorted

template <typename Tag>
void top_p_candidates_rows(const TopPCandidatesParams& a) {
  const auto* probs = static_cast<const typename Tag::T*>(a.probs);
  const int64_t kk = a.max_candidate_len;
  const int id_bits = id_bits_for(a.vocab);
  for_rows(a.rows, a.num_threads, [&](int64_t t, Scratch& s) {
    int64_t* ids = a.candidate_ids + t * kk;
    float* scores = a.candidate_scores + t * kk;
    int64_t len = 0;
    int64_t b;
    if (row_request(a.batch_id_per_token_output, t, a.batch, &b)) {
      const Row<Tag> row{probs + t * a.vocab, a.vocab, id_bits};
      const int64_t chunks = std::min<int64_t>(a.vocab, std::max<int64_t>(kk, kMinChunks));
      const RowTotals totals = totals_and_bound(row, chunks, s.chunk_max);
      if (totals.n_valid > 0) {
        const int64_t want = std::min(kk, totals.n_valid);
        const uint32_t tau = bound_for_count(s.chunk_max, chunks, want);
        int64_t n;
        RadixStart level0;
        const RadixStart* start = nullptr;
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

  // The row's totals and chunk maxima, with as many chunks as top_k needs for its bound.
  RowSelect(const Row<Tag>& r, int32_t top_k, Scratch& scratch) : row(r), s(scratch) {
    const bool may_limit = top_k > 0 && top_k < row.vocab;
    chunks = std::min<int64_t>(row.vocab, std::max<int64_t>(may_limit ? top_k : 0, kMinChunks));
    fast = chunks <= kMaxChunks;
    if (!fast) chunks = std::min<int64_t>(row.vocab, kMinChunks);  // totals only
    totals = totals_and_bound(row, chunks, s.chunk_max);
  }

  SelectResult operator()(uint64_t lower, int64_t target, bool by_mass) {
    if (!first) return radix_select(s.gathered.data(), n, row.id_bits, lower, target, by_mass, s);
    first = false;
    n = -1;
    if (fast) {
      bool proven = true;
      const uint32_t tau = by_mass ? bound_for_mass(s.chunk_max, chunks, target, &proven)
                                   : bound_for_count(s.chunk_max, chunks, target);
      // A flat row (largest entry < 4x the mean) whose S is not proven above
      // tau: S is most of the row, skip the gather that would fail.
      const bool near_flat = by_mass && !proven &&
                             static_cast<double>(mass_of_bits(s.chunk_max[0])) * static_cast<double>(totals.n_valid) <
                                 4.0 * static_cast<double>(totals.mass);
      if (tau > 0 && !near_flat) {
        int64_t gmass;
        n = gather_above(row, tau, s, &gmass);
        if (by_mass && gmass < target) n = -1;  // S reaches below tau
      }
    }
    if (n < 0 && by_mass) {  // S reaches below every chunk maximum: a near-flat row
      flat = true;
      const uint32_t max_key = *std::max_element(s.chunk_max, s.chunk_max + chunks);
      return flat_select(row, totals.min_key, max_key, totals.mass, target, s, &bucket);
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
                    select);
}

template <typename Tag>
void sample_tokens_rows(const SampleTokensParams& a) {
  const auto* probs = static_cast<const typename Tag::T*>(a.probs);
  const int id_bits = id_bits_for(a.vocab);
  for_rows(a.rows, a.num_threads, [&](int64_t t, Scratch& s) {
    int64_t token = -1;
    int64_t b;
    if (row_request(a.batch_id_per_token_output, t, a.batch, &b)) {
      const Row<Tag> row{probs + t * a.vocab, a.vocab, id_bits};
      RowSelect<Tag> select(row, a.top_k[b], s);
      if (select.totals.n_valid > 0) {
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
  for_rows(a.rows, a.num_threads, [&](int64_t t, Scratch& s) {
    float* out = a.target_probs + t * a.vocab;
    int64_t b;
    if (!row_request(a.batch_id_per_token_output, t, a.batch, &b)) {
      std::fill(out, out + a.vocab, 0.0f);
      return;
    }
    const Row<Tag> row{probs + t * a.vocab, a.vocab, id_bits};
    RowSelect<Tag> select(row, a.top_k[b], s);
    if (select.totals.n_valid == 0) {
      std::fill(out, out + a.vocab, 0.0f);
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
  switch (a.probs_dtype) {
    case kProbF32: top_p_candidates_rows<F32Tag>(a); break;
    case kProbF16: top_p_candidates_rows<F16Tag>(a); break;
    default: top_p_candidates_rows<BF16Tag>(a); break;
  }
  return kOk;
}

int sample_tokens_cpu(const SampleTokensParams& a) {
  if (check_sampling_sizes(a.rows, a.vocab, a.batch, a.probs_dtype) != kOk) return kInvalidArgument;
  if (!sample_stream_ok(a.rand_stream)) return kInvalidArgument;
  switch (a.probs_dtype) {
    case kProbF32: sample_tokens_rows<F32Tag>(a); break;
    case kProbF16: sample_tokens_rows<F16Tag>(a); break;
    default: sample_tokens_rows<BF16Tag>(a); break;
  }
  return kOk;
}

int top_k_top_p_probs_cpu(const TopKTopPProbsParams& a) {
  if (check_sampling_sizes(a.rows, a.vocab, a.batch, a.probs_dtype) != kOk) return kInvalidArgument;
  switch (a.probs_dtype) {
    case kProbF32: top_k_top_p_probs_rows<F32Tag>(a); break;
    case kProbF16: top_k_top_p_probs_rows<F16Tag>(a); break;
    default: top_k_top_p_probs_rows<BF16Tag>(a); break;
  }
  return kOk;
}

}  // namespace fastspec

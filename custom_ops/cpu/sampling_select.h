// The exact selects of the CPU sampling kernels: the level-0 row histograms,
// the radix select over gathered combined keys (11 bits a level), and the
// chunk-maxima bounds a gather can stop at. Included by sampling.cc only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>

#include "sampling_row.h"

namespace fastspec {
namespace {

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
SelectResult radix_select(const uint64_t* keys, int64_t n, int id_bits, uint64_t lower, int64_t target, bool by_mass,
                          Scratch& s, const RadixStart* start = nullptr) {
  const int width = combined_width(id_bits);
  RadixStart st = start != nullptr ? *start : RadixStart{0, 0, 0, 0};
  const uint64_t* src = keys;
  int64_t n_src = n;
  if (static_cast<int64_t>(s.work.size()) < n) s.work.resize(n);
  for (;;) {
    const RadixLevel level = radix_level(width, st.done, kRadixBits);
    std::fill(&s.hcount[0][0], &s.hcount[0][0] + 2 * kRadixBuckets, 0);
    std::fill(&s.hmass[0][0], &s.hmass[0][0] + 2 * kRadixBuckets, 0);
    const uint64_t want_high = st.prefix >> level.high;  // none at level 0
    uint64_t* dst = s.work.data();
    int64_t n_dst = 0;
    for (int64_t j = 0; j < n_src; ++j) {
      const uint64_t c = src[j];
      if (c < lower || (c >> level.high) != want_high) continue;
      const uint32_t d = level.digit(c);
      const int copy = static_cast<int>(n_dst & 1);
      s.hcount[copy][d] += 1;
      s.hmass[copy][d] += mass_of_bits(cut_bits(c, id_bits));
      s.hlast[d] = n_dst;
      dst[n_dst++] = c;  // compaction: the next level reads only these
    }
    src = dst;
    n_src = n_dst;
    const int d = walk_buckets(s, 1 << level.digits, by_mass, target, &st.above_w, &st.above_mass);
    st.prefix |= static_cast<uint64_t>(d) << level.shift;
    st.done += level.digits;
    if (s.hcount[0][d] == 1 || level.shift == 0) {
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
  const RadixLevel level = radix_level(width, st.done, kRadixBits);
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
      const uint32_t d = level.digit(c);
      const int copy = static_cast<int>(n & 1);
      s.hcount[copy][d] += 1;
      s.hmass[copy][d] += mass_of_bits(k);
      s.hlast[d] = n;
    }
    out[n++] = c;
  }
  *n_out = n;
  const int d = walk_buckets(s, 1 << level.digits, by_mass, target, &st.above_w, &st.above_mass);
  st.prefix |= static_cast<uint64_t>(d) << level.shift;
  st.done += level.digits;
  if (s.hcount[0][d] == 1 || level.shift == 0) {
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
// short). The passes are loops the compiler (or sampling_avx2.h and
// sampling_avx512.h) vectorises, but for the gather's stores, which only the
// survivors take.

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

}  // namespace
}  // namespace fastspec

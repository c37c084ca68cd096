// The portable row passes of the CPU sampling kernels: what aarch64 and old
// x86 CPUs run, and the reference sampling_avx2.h and sampling_avx512.h match
// bit for bit. Included by sampling.cc only (through sampling_passes.h).
#pragma once

#include <algorithm>
#include <cstdint>

#include "sampling_row.h"
#include "simd.h"

namespace fastspec {
namespace {

// totals_and_bound's sums in progress: valid entries, their mass and the
// smallest key - 1 (an invalid key, 0, wraps to the top). The SIMD versions add
// their lanes and hand it the tail of each chunk.
struct Totals {
  int64_t n = 0, mass = 0;
  uint32_t min_less_one = 0xffffffffu;

  // Entries [begin, end) one at a time; returns their largest key, or max if larger.
  template <typename Tag>
  uint32_t add(const Row<Tag>& row, int64_t begin, int64_t end, uint32_t max) {
    for (int64_t i = begin; i < end; ++i) {
      const uint32_t k = row.key(i);
      n += k != 0;
      mass += mass_fast(k);
      max = std::max(max, k);
      min_less_one = std::min(min_less_one, k - 1u);
    }
    return max;
  }
  RowTotals result() const { return {n, mass, min_less_one + 1u}; }
};

// Row totals (valid entries, their mass, the smallest valid key) and each chunk's maximum key.
template <typename Tag>
RowTotals totals_and_bound(Scalar, const Row<Tag>& row, int64_t chunks, uint32_t* maxima) {
  Totals totals;
  const int64_t size = row.vocab / chunks;  // the last chunk takes the remainder
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = c * size, end = c + 1 == chunks ? row.vocab : begin + size;
    maxima[c] = totals.add(row, begin, end, 0);
  }
  return totals.result();
}

// Combined keys of the entries with key >= tau (tau >= 1), ids ascending; their mass.
template <typename Tag>
int64_t gather_above(Scalar, const Row<Tag>& row, uint32_t tau, Scratch& s, int64_t* mass) {
  return Gather<Tag>(row, s).rest(0, tau, mass);
}

// Whether a gather above tau is bound to fall short of thr: unknown without
// a sample of the row, which only the SIMD versions take (a guess that picks
// the path, never the result).
template <typename Tag>
bool gather_hopeless(Scalar, const Row<Tag>& /*row*/, uint32_t /*tau*/, int64_t /*thr*/, int64_t /*total*/) {
  return false;
}

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
int flat_cut_bucket(Scalar, const Row<Tag>& row, uint32_t lo, uint32_t /*max_key*/, int shift, int64_t excl,
                    int64_t /*total*/, int64_t* hist, int64_t* below) {
  flat_histogram(row, lo, shift, hist);
  return walk_from_bottom(hist, kRadixBuckets, excl, below);  // found: the buckets hold the total > excl
}

// flat_bucket_pass over entries [begin, end), one at a time: the combined keys
// of those with key in [blo, btop) appended to out (*n of them so far); returns
// the mass of those with key >= btop.
template <typename Tag>
int64_t bucket_entries(const Row<Tag>& row, int64_t begin, int64_t end, uint32_t blo, uint32_t btop, uint64_t* out,
                       int64_t* n) {
  int64_t m = 0;
  for (int64_t i = begin; i < end; ++i) {
    const uint32_t k = row.key(i);
    m += k >= btop ? mass_fast(k) : 0;
    if (k >= blo && k < btop) out[(*n)++] = combined_key(k, i, row.vocab, row.id_bits);
  }
  return m;
}

// Combined keys of the entries with key in [blo, btop) (ids ascending) into
// s.gathered, and (when block_masses, for a draw) s.block_mass[b] = mass of
// the keys >= btop among ids [b kDrawBlock, (b+1) kDrawBlock). Returns the
// number gathered.
template <typename Tag>
int64_t flat_bucket_pass(Scalar, const Row<Tag>& row, uint32_t blo, uint32_t btop, uint32_t /*max_key*/,
                         bool block_masses, Scratch& s) {
  flat_prepare(row.vocab, s);
  int64_t n = 0;
  for (int64_t begin = 0, b = 0; begin < row.vocab; begin += kDrawBlock, ++b) {
    const int64_t end = std::min(row.vocab, begin + kDrawBlock);
    const int64_t mass = bucket_entries(row, begin, end, blo, btop, s.gathered.data(), &n);
    if (block_masses) s.block_mass[b] = mass;
  }
  return n;
}

// top_k_top_p_probs' write of a near-flat row: out[i] = kept_probability(mass,
// set_mass) where combined >= cut, else 0; from id `begin` on.
template <typename Tag>
void write_kept(Scalar, const Row<Tag>& row, uint64_t cut, int64_t set_mass, float* out, int64_t begin = 0) {
  for (int64_t i = begin; i < row.vocab; ++i) {
    const uint32_t k = row.key(i);
    out[i] = combined_key(k, i, row.vocab, row.id_bits) >= cut ? kept_probability(mass_of_bits(k), set_mass) : 0.0f;
  }
}

}  // namespace
}  // namespace fastspec

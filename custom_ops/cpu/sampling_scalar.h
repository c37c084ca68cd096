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

// Row totals (valid entries, their mass, the smallest valid key) and each chunk's maximum key.
template <typename Tag>
RowTotals totals_and_bound(Scalar, const Row<Tag>& row, int64_t chunks, uint32_t* maxima) {
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

// Combined keys of the entries with key >= tau (tau >= 1), ids ascending; their mass.
template <typename Tag>
int64_t gather_above(Scalar, const Row<Tag>& row, uint32_t tau, Scratch& s, int64_t* mass) {
  return Gather<Tag>(row, s).rest(0, tau, mass);
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

// Combined keys of the entries with key in [blo, btop) (ids ascending) into
// s.gathered, and s.block_mass[b] = mass of the keys >= btop among ids
// [b kDrawBlock, (b+1) kDrawBlock). Returns the number gathered.
template <typename Tag>
int64_t flat_bucket_pass(Scalar, const Row<Tag>& row, uint32_t blo, uint32_t btop, uint32_t /*max_key*/, Scratch& s) {
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

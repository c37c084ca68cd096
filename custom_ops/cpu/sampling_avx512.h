// The AVX-512 row passes of the CPU sampling kernels (F and DQ): 16 keys at a
// time, the same integers as sampling_scalar.h (bf16 bits << 16 are its f32
// bits; fp16 as f16_to_f32_bits). Every function carries FS_TARGET_AVX512.
// Included by sampling.cc only (through sampling_passes.h).
#pragma once

#include "fastspec/cpu_features.h"

#if FASTSPEC_X86
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "sampling_lanes.h"
#include "sampling_row.h"
#include "sampling_scalar.h"
#include "simd.h"

namespace fastspec {
namespace {

template <typename Tag>
FS_TARGET_AVX512 RowTotals totals_and_bound(Avx512, const Row<Tag>& row, int64_t chunks, uint32_t* maxima) {
  const __m512d scale = _mm512_set1_pd(1099511627776.0);
  const __m512i one_bits = _mm512_set1_epi32(0x3f800000);
  const __m512i one = _mm512_set1_epi32(1);
  Totals totals;
  __m512i msum = _mm512_setzero_si512();
  __m512i vmin = _mm512_set1_epi32(-1);  // min of key - 1: invalid (0) wraps to the top
  const int64_t size = row.vocab / chunks;
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = c * size, end = c + 1 == chunks ? row.vocab : begin + size;
    __m512i vmax = _mm512_setzero_si512();
    int64_t i = begin;
    for (; i < end; i += 16) {
      __m512i key;
      if (end - i >= 16) {
        key = keys16<Tag>(row.p + i);
      } else if (end >= 16) {  // the chunk's tail: the 16 entries ending there, those before i as key 0
        const __mmask16 fresh = static_cast<__mmask16>(0xffffu << (16 - (end - i)));
        key = _mm512_maskz_mov_epi32(fresh, keys16<Tag>(row.p + end - 16));
      } else {
        break;  // a row of fewer than 16 entries
      }
      vmax = _mm512_max_epu32(vmax, key);
      vmin = _mm512_min_epu32(vmin, _mm512_sub_epi32(key, one));
      totals.n += __builtin_popcount(_mm512_test_epi32_mask(key, key));
      const __m512 clamped = _mm512_castsi512_ps(_mm512_min_epu32(key, one_bits));
      const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(clamped));
      const __m512d hi = _mm512_cvtps_pd(_mm512_extractf32x8_ps(clamped, 1));
      msum = _mm512_add_epi64(msum, _mm512_cvttpd_epi64(_mm512_mul_pd(lo, scale)));
      msum = _mm512_add_epi64(msum, _mm512_cvttpd_epi64(_mm512_mul_pd(hi, scale)));
    }
    maxima[c] = totals.add(row, i, end, _mm512_reduce_max_epu32(vmax));
  }
  totals.mass += _mm512_reduce_add_epi64(msum);
  totals.min_less_one = std::min(totals.min_less_one, _mm512_reduce_min_epu32(vmin));
  return totals.result();
}

template <typename Tag>
FS_TARGET_AVX512 int64_t gather_above(Avx512, const Row<Tag>& row, uint32_t tau, Scratch& s, int64_t* mass) {
  Gather<Tag> gather(row, s);
  const __m512i vtau = _mm512_set1_epi32(static_cast<int>(tau));
  int64_t i = 0;
  for (; i + 16 <= row.vocab; i += 16) gather.lanes(i, _mm512_cmpge_epu32_mask(keys16<Tag>(row.p + i), vtau));
  return gather.rest(i, tau, mass);
}

// The masses of 16 keys (mass_fast), lanes 0-7 and 8-15.
FS_TARGET_AVX512 inline void masses16(__m512i key, __m512i* lo, __m512i* hi) {
  const __m512d scale = _mm512_set1_pd(1099511627776.0);
  const __m512 clamped = _mm512_castsi512_ps(_mm512_min_epu32(key, _mm512_set1_epi32(0x3f800000)));
  *lo = _mm512_cvttpd_epi64(_mm512_mul_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(clamped)), scale));
  *hi = _mm512_cvttpd_epi64(_mm512_mul_pd(_mm512_cvtps_pd(_mm512_extractf32x8_ps(clamped, 1)), scale));
}

// A near-flat row's sample, which every guess below reads: every kSampleEvery-th
// group of 64 entries, taken only from kMinGroups groups on (one place, so the
// guesses and the histogram's sample agree).
constexpr int64_t kSampleEvery = 32;
constexpr int64_t kMinGroups = 128;

// Whether the sample puts the mass at or above tau below half of thr: then a
// gather above tau would very likely fall short. Only a guess: it picks the
// path, not the result.
template <typename Tag>
FS_TARGET_AVX512 bool gather_hopeless(Avx512, const Row<Tag>& row, uint32_t tau, int64_t thr, int64_t total) {
  const int64_t groups = row.vocab / 64;
  if (groups < kMinGroups) return false;  // too small a sample
  const __m512i vtau = _mm512_set1_epi32(static_cast<int>(tau));
  __m512i all = _mm512_setzero_si512(), above = _mm512_setzero_si512();
  for (int64_t g = 0; g < groups; g += kSampleEvery) {
    for (int v = 0; v < 4; ++v) {
      const __m512i k = keys16<Tag>(row.p + g * 64 + 16 * v);
      const __mmask16 hit = _mm512_cmpge_epu32_mask(k, vtau);
      __m512i mlo, mhi;
      masses16(k, &mlo, &mhi);
      all = _mm512_add_epi64(all, _mm512_add_epi64(mlo, mhi));
      above = _mm512_mask_add_epi64(above, static_cast<__mmask8>(hit), above, mlo);
      above = _mm512_mask_add_epi64(above, static_cast<__mmask8>(hit >> 8), above, mhi);
    }
  }
  const double sampled = static_cast<double>(_mm512_reduce_add_epi64(all));
  return static_cast<double>(_mm512_reduce_add_epi64(above)) * static_cast<double>(total) <
         0.5 * static_cast<double>(thr) * sampled;
}

// Keys below 2^-14 (as floats) have masses below 2^26 (mass_of_bits in 32-bit
// lanes), so a 32-bit lane sums its kDrawBlock / 16 entries of a block
// without overflow.
constexpr uint32_t kSmallKeys = 0x38800000u;
static_assert(kDrawBlock / 16 * (int64_t{1} << 26) <= (int64_t{1} << 32), "block sums fit 32 bits");

// How far (as a fraction of the row's mass) the cut may lie from where a
// near-flat row's sample puts it before the full histogram is needed.
constexpr double kFlatMargin = 0.03;

FS_TARGET_AVX512 inline __m512i small_masses16(__m512i key) {  // mass_of_bits for keys < kSmallKeys
  const __m512i e = _mm512_srli_epi32(key, 23);
  const __m512i mant = _mm512_or_si512(_mm512_and_si512(key, _mm512_set1_epi32(0x7fffff)), _mm512_set1_epi32(0x800000));
  const __m512i bias = _mm512_set1_epi32(110);
  const __m512i up = _mm512_sllv_epi32(mant, _mm512_max_epi32(_mm512_sub_epi32(e, bias), _mm512_setzero_si512()));
  const __m512i m = _mm512_srlv_epi32(up, _mm512_max_epi32(_mm512_sub_epi32(bias, e), _mm512_setzero_si512()));
  return _mm512_maskz_mov_epi32(_mm512_test_epi32_mask(e, e), m);  // exponent 0 (subnormal, invalid): 0
}

// Entries [i, i + 64) whose bucket lies in [floor, limit) go into hist:
// buckets (and, for small keys, masses) computed and compressed by the vector
// unit, the adds in scalar (the part that costs). With kFloor, the masses of
// the entries below floor are summed into *below (8 x int64) instead.
template <typename Tag, bool kSmall, bool kFloor = false>
FS_TARGET_AVX512 inline void flat_group(const Row<Tag>& row, int64_t i, __m512i vlo, __m128i vshift, __m512i vlimit,
                                        int64_t* hist, __m512i vfloor = __m512i{}, __m512i* below = nullptr) {
  alignas(64) uint32_t dig[64 + 16];
  alignas(64) uint32_t val[64 + 16];  // masses (kSmall) or keys
  int m = 0;
  for (int v = 0; v < 4; ++v) {
    const __m512i k = keys16<Tag>(row.p + i + 16 * v);
    const __m512i d = _mm512_srl_epi32(_mm512_sub_epi32(_mm512_max_epu32(k, vlo), vlo), vshift);  // invalid: 0
    __mmask16 sel = _mm512_cmplt_epu32_mask(d, vlimit);
    if (kFloor) {
      const __mmask16 under = _mm512_cmplt_epu32_mask(d, vfloor);
      __m512i mlo, mhi;
      masses16(k, &mlo, &mhi);
      *below = _mm512_mask_add_epi64(*below, static_cast<__mmask8>(under), *below, mlo);
      *below = _mm512_mask_add_epi64(*below, static_cast<__mmask8>(under >> 8), *below, mhi);
      sel &= static_cast<__mmask16>(~under);
    }
    _mm512_storeu_si512(dig + m, _mm512_maskz_compress_epi32(sel, d));
    _mm512_storeu_si512(val + m, _mm512_maskz_compress_epi32(sel, kSmall ? small_masses16(k) : k));
    m += __builtin_popcount(sel);
  }
  for (int j = 0; j < m; ++j) hist[dig[j]] += kSmall ? static_cast<int64_t>(val[j]) : mass_fast(val[j]);
}

// The bucket at which the mass from the bottom of the sampled histogram
// first exceeds frac of it (kRadixBuckets if none does).
int sampled_bucket(const int64_t* hist, int64_t sampled, double frac) {
  const int64_t want = static_cast<int64_t>(frac * static_cast<double>(sampled));
  int64_t cum = 0;
  int d = 0;
  while (d < kRadixBuckets && cum + hist[d] <= want) cum += hist[d++];
  return d;
}

// Whether at least 1/8 of the sampled entries have a bucket below floor: only
// then does summing their masses in vector lanes cost less than adding them
// to the histogram (a near-flat row has few entries below its window).
template <typename Tag>
FS_TARGET_AVX512 bool many_below(const Row<Tag>& row, __m512i vlo, __m128i vshift, int floor) {
  const __m512i vfloor = _mm512_set1_epi32(floor);
  int64_t n = 0, sampled = 0;
  for (int64_t g = 0; g < row.vocab / 64; g += kSampleEvery) {
    for (int v = 0; v < 4; ++v) {
      const __m512i k = keys16<Tag>(row.p + g * 64 + 16 * v);
      const __m512i d = _mm512_srl_epi32(_mm512_sub_epi32(_mm512_max_epu32(k, vlo), vlo), vshift);
      n += __builtin_popcount(_mm512_cmplt_epu32_mask(d, vfloor));
      sampled += 16;
    }
  }
  return 8 * n >= sampled;
}

// flat_cut_bucket(Scalar)'s answer in two phases. The sample is histogrammed
// in full; from it, a window of buckets that the cut very likely lies in (the bottom excl/total of the mass, give or
// take a margin): a top-p cut lies near the bottom of a flat row. The rest of
// the row adds only its entries inside the window to the histogram, and sums
// the mass of those below it in vector lanes. If the cut is not found inside
// the window, the full histogram is built after all: the result is the same
// either way, only the time differs.
template <typename Tag, bool kSmall>
FS_TARGET_AVX512 int flat_cut_bucket_avx512(const Row<Tag>& row, uint32_t lo, int shift, int64_t excl, int64_t total,
                                            int64_t* hist, int64_t* below) {
  std::fill(hist, hist + kRadixBuckets, 0);
  const __m512i vlo = _mm512_set1_epi32(static_cast<int>(lo));
  const __m128i vshift = _mm_cvtsi32_si128(shift);
  const int64_t groups = row.vocab / 64;
  const __m512i all = _mm512_set1_epi32(kRadixBuckets);
  for (int64_t g = 0; g < groups; g += kSampleEvery) flat_group<Tag, kSmall>(row, g * 64, vlo, vshift, all, hist);
  int floor = 0, limit = kRadixBuckets;
  int64_t sampled = 0;
  for (int d = 0; d < kRadixBuckets; ++d) sampled += hist[d];
  const double frac = static_cast<double>(excl) / static_cast<double>(total);
  if (groups >= kMinGroups && frac + kFlatMargin < 0.9) {
    limit = std::min(kRadixBuckets, sampled_bucket(hist, sampled, frac + kFlatMargin) + 9);
    if (frac > kFlatMargin) floor = std::max(0, sampled_bucket(hist, sampled, frac - kFlatMargin) - 8);
    if (floor > 0 && !many_below(row, vlo, vshift, floor)) floor = 0;
  }
  const __m512i vlimit = _mm512_set1_epi32(limit);
  const __m512i vfloor = _mm512_set1_epi32(floor);
  __m512i vbelow = _mm512_setzero_si512();  // the rest's mass below floor
  for (int64_t g = 0; g < groups; ++g) {
    if (g % kSampleEvery == 0) continue;
    if (floor > 0) {
      flat_group<Tag, kSmall, true>(row, g * 64, vlo, vshift, vlimit, hist, vfloor, &vbelow);
    } else {
      flat_group<Tag, kSmall>(row, g * 64, vlo, vshift, vlimit, hist);
    }
  }
  for (int64_t i = groups * 64; i < row.vocab; ++i) {
    const uint32_t k = row.key(i);
    const uint32_t d = (std::max(k, lo) - lo) >> shift;
    if (static_cast<int>(d) < limit) hist[d] += mass_fast(k);
  }
  // Everything below floor (the sample's and the tail's buckets there, and vbelow) is one sum.
  int64_t under = _mm512_reduce_add_epi64(vbelow);
  for (int d = 0; d < floor; ++d) under += hist[d];
  if (under <= excl) {
    const int d = walk_from_bottom(hist + floor, limit - floor, excl - under, below);
    if (d >= 0) {
      *below += under;
      return floor + d;
    }
    if (limit == kRadixBuckets) return -1;  // unreachable: the buckets hold the total > excl
  }
  // The cut lies outside the window: the full histogram after all.
  const __m512i vall = _mm512_set1_epi32(kRadixBuckets);
  std::fill(hist, hist + kRadixBuckets, 0);
  for (int64_t g = 0; g < groups; ++g) flat_group<Tag, kSmall>(row, g * 64, vlo, vshift, vall, hist);
  for (int64_t i = groups * 64; i < row.vocab; ++i) {
    const uint32_t k = row.key(i);
    hist[(std::max(k, lo) - lo) >> shift] += mass_fast(k);
  }
  return walk_from_bottom(hist, kRadixBuckets, excl, below);
}

template <typename Tag, bool kBlocks>
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
      if (kBlocks && small) {
        acc = _mm512_mask_add_epi32(acc, above, acc, small_masses16(key));
      } else if (kBlocks) {
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
    if (kBlocks && small) {
      acc = _mm512_add_epi64(_mm512_cvtepu32_epi64(_mm512_castsi512_si256(acc)),
                             _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(acc, 1)));
    }
    const int64_t rest = bucket_entries(row, i, end, blo, btop, out, &n);
    if (kBlocks) s.block_mass[b] = _mm512_reduce_add_epi64(acc) + rest;
  }
  return n;
}

template <typename Tag>
FS_TARGET_AVX512 int64_t flat_bucket_pass(Avx512, const Row<Tag>& row, uint32_t blo, uint32_t btop, uint32_t max_key,
                                          bool block_masses, Scratch& s) {
  return block_masses ? flat_bucket_pass_avx512<Tag, true>(row, blo, btop, max_key, s)
                      : flat_bucket_pass_avx512<Tag, false>(row, blo, btop, max_key, s);
}

// sampling_avx2.h write_kept, 16 keys (two divisions of 8 doubles) at a time.
template <typename Tag>
FS_TARGET_AVX512 void write_kept(Avx512, const Row<Tag>& row, uint64_t cut, int64_t set_mass, float* out) {
  if (set_mass <= 0) return write_kept(Scalar{}, row, cut, set_mass, out);
  const __m512i cut_key = _mm512_set1_epi32(static_cast<int>(cut_bits(cut, row.id_bits)));
  const __m512i past_cut_id = _mm512_set1_epi32(static_cast<int>(cut_id(cut, row.vocab, row.id_bits) + 1));
  const __m512d total = _mm512_set1_pd(static_cast<double>(set_mass));
  const __m512d scale = _mm512_set1_pd(1099511627776.0);
  const __m512i one_bits = _mm512_set1_epi32(0x3f800000);
  const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  int64_t i = 0;
  for (; i + 16 <= row.vocab; i += 16) {
    const __m512i key = keys16<Tag>(row.p + i);
    const __m512i ids = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(i)), lanes);  // V < 2^31
    const __mmask16 kept = _mm512_cmpgt_epu32_mask(key, cut_key) |
                           (_mm512_cmpeq_epi32_mask(key, cut_key) & _mm512_cmpgt_epi32_mask(past_cut_id, ids));
    const __m512 clamped = _mm512_castsi512_ps(_mm512_min_epu32(key, one_bits));
    const __m512d mlo = _mm512_roundscale_pd(_mm512_mul_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(clamped)), scale),
                                             _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m512d mhi = _mm512_roundscale_pd(_mm512_mul_pd(_mm512_cvtps_pd(_mm512_extractf32x8_ps(clamped, 1)), scale),
                                             _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 lo = _mm512_cvtpd_ps(_mm512_div_pd(mlo, total));
    const __m256 hi = _mm512_cvtpd_ps(_mm512_div_pd(mhi, total));
    const __m512 both = _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
    _mm512_storeu_ps(out + i, _mm512_maskz_mov_ps(kept, both));
  }
  write_kept(Scalar{}, row, cut, set_mass, out, i);
}

// The bucket that straddles the cut, with the masses in 32-bit lanes when every key is small.
template <typename Tag>
FS_TARGET_AVX512 int flat_cut_bucket(Avx512, const Row<Tag>& row, uint32_t lo, uint32_t max_key, int shift,
                                     int64_t excl, int64_t total, int64_t* hist, int64_t* below) {
  return max_key < kSmallKeys ? flat_cut_bucket_avx512<Tag, true>(row, lo, shift, excl, total, hist, below)
                              : flat_cut_bucket_avx512<Tag, false>(row, lo, shift, excl, total, hist, below);
}

}  // namespace
}  // namespace fastspec

#endif  // FASTSPEC_X86

// The AVX2 row passes of the CPU sampling kernels: the row totals and the
// gather above a bound, 8 keys at a time, and top_k_top_p_probs' write of a
// near-flat row, with the integers of sampling_scalar.h: fp16 widened as
// f16_to_f32_bits, masses as exact doubles (mass_fast's product, truncated)
// summed as int64; the write divides 4 doubles at a time and rounds as the
// scalar code does: the same bits. Every function carries FS_TARGET_AVX2.
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
FS_TARGET_AVX2 RowTotals totals_and_bound(Avx2, const Row<Tag>& row, int64_t chunks, uint32_t* maxima) {
  const __m256i one_bits = _mm256_set1_epi32(0x3f800000);
  const __m256i one = _mm256_set1_epi32(1);
  Totals totals;
  __m256i msum = _mm256_setzero_si256();
  __m256i vmin = _mm256_set1_epi32(-1);  // min of key - 1: invalid (0) wraps to the top
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
      totals.n += 8 - __builtin_popcount(static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(invalid))));
      const __m256 clamped = _mm256_castsi256_ps(_mm256_min_epu32(key, one_bits));
      msum = _mm256_add_epi64(msum, doubles_to_int64(masses4(_mm256_castps256_ps128(clamped))));
      msum = _mm256_add_epi64(msum, doubles_to_int64(masses4(_mm256_extractf128_ps(clamped, 1))));
    }
    maxima[c] = totals.add(row, i, end, max_epu32(vmax));
  }
  totals.mass += sum_epi64(msum);
  totals.min_less_one = std::min(totals.min_less_one, min_epu32(vmin));
  return totals.result();
}

template <typename Tag>
FS_TARGET_AVX2 int64_t gather_above(Avx2, const Row<Tag>& row, uint32_t tau, Scratch& s, int64_t* mass) {
  Gather<Tag> gather(row, s);
  const __m256i below_tau = _mm256_set1_epi32(static_cast<int>(tau - 1));  // 1 <= tau < 2^31: signed compares
  int64_t i = 0;
  for (; i + 8 <= row.vocab; i += 8) {
    const __m256i above = _mm256_cmpgt_epi32(keys8<Tag>(row.p + i), below_tau);
    gather.lanes(i, static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(above))));
  }
  return gather.rest(i, tau, mass);
}

template <typename Tag>
FS_TARGET_AVX2 void write_kept(Avx2, const Row<Tag>& row, uint64_t cut, int64_t set_mass, float* out) {
  if (set_mass <= 0) return write_kept(Scalar{}, row, cut, set_mass, out);
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
  write_kept(Scalar{}, row, cut, set_mass, out, i);
}

}  // namespace
}  // namespace fastspec

#endif  // FASTSPEC_X86

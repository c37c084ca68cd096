// SIMD search for a token id in an int64 run: the inner loop of the n-gram
// scans (the newest token is compared first; candidates are rare).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace fastspec {

// First e in [from, to) with region[e] == value, or `to`.
inline int64_t find_token(const int64_t* region, int64_t from, int64_t to, int64_t value) {
  int64_t e = from;
#if defined(__AVX512F__)
  const __m512i v = _mm512_set1_epi64(value);
  for (; e + 16 <= to; e += 16) {
    const __mmask8 m0 = _mm512_cmpeq_epi64_mask(_mm512_loadu_si512(region + e), v);
    const __mmask8 m1 = _mm512_cmpeq_epi64_mask(_mm512_loadu_si512(region + e + 8), v);
    const unsigned mask = static_cast<unsigned>(m0) | (static_cast<unsigned>(m1) << 8);
    if (mask) return e + __builtin_ctz(mask);
  }
#elif defined(__AVX2__)
  const __m256i v = _mm256_set1_epi64x(value);
  for (; e + 8 <= to; e += 8) {
    const __m256i c0 = _mm256_cmpeq_epi64(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(region + e)), v);
    const __m256i c1 = _mm256_cmpeq_epi64(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(region + e + 4)), v);
    const unsigned mask = static_cast<unsigned>(_mm256_movemask_pd(_mm256_castsi256_pd(c0))) |
                          (static_cast<unsigned>(_mm256_movemask_pd(_mm256_castsi256_pd(c1))) << 4);
    if (mask) return e + __builtin_ctz(mask);
  }
#endif
  for (; e < to; ++e) {
    if (region[e] == value) return e;
  }
  return to;
}

}  // namespace fastspec

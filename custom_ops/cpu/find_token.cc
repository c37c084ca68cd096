// The versions of find_token (find_token.h) and the choice among them.
#include "find_token.h"

#include "fastspec/cpu_features.h"

#if FASTSPEC_X86
#include <immintrin.h>
#endif

namespace fastspec {
namespace {

int64_t find_token_scalar(const int64_t* region, int64_t from, int64_t to, int64_t value) {
  for (int64_t e = from; e < to; ++e) {
    if (region[e] == value) return e;
  }
  return to;
}

#if FASTSPEC_X86
FS_TARGET_AVX512 int64_t find_token_avx512(const int64_t* region, int64_t from, int64_t to, int64_t value) {
  int64_t e = from;
  const __m512i v = _mm512_set1_epi64(value);
  for (; e + 16 <= to; e += 16) {
    const __mmask8 m0 = _mm512_cmpeq_epi64_mask(_mm512_loadu_si512(region + e), v);
    const __mmask8 m1 = _mm512_cmpeq_epi64_mask(_mm512_loadu_si512(region + e + 8), v);
    const unsigned mask = static_cast<unsigned>(m0) | (static_cast<unsigned>(m1) << 8);
    if (mask) return e + __builtin_ctz(mask);
  }
  for (; e < to; ++e) {
    if (region[e] == value) return e;
  }
  return to;
}

FS_TARGET_AVX2 int64_t find_token_avx2(const int64_t* region, int64_t from, int64_t to, int64_t value) {
  int64_t e = from;
  const __m256i v = _mm256_set1_epi64x(value);
  for (; e + 8 <= to; e += 8) {
    const __m256i c0 = _mm256_cmpeq_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(region + e)), v);
    const __m256i c1 = _mm256_cmpeq_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(region + e + 4)), v);
    const unsigned mask = static_cast<unsigned>(_mm256_movemask_pd(_mm256_castsi256_pd(c0))) |
                          (static_cast<unsigned>(_mm256_movemask_pd(_mm256_castsi256_pd(c1))) << 4);
    if (mask) return e + __builtin_ctz(mask);
  }
  for (; e < to; ++e) {
    if (region[e] == value) return e;
  }
  return to;
}
#endif

FindTokenFn resolve() {
  switch (simd_level()) {
#if FASTSPEC_X86
    case kSimdAvx512:
      return find_token_avx512;
    case kSimdAvx2:
      return find_token_avx2;
#endif
    default:
      return find_token_scalar;
  }
}

}  // namespace

FindTokenFn find_token_fn() {
  static const FindTokenFn fn = resolve();
  return fn;
}

}  // namespace fastspec

// SIMD lanes as types, so that a CPU pass is written once for AVX2 and
// AVX-512: Avx2Lanes (8 lanes) and Avx512Lanes (16 lanes) have the same
// static functions over their float32 (F), int32 (I) and lane-mask (M) types,
// each the plain IEEE or integer operation per lane (so a pass keeps the
// scalar code's bits at either width).
//
// A template cannot carry a target attribute, so a pass written over V runs
// inside a wrapper of its level marked FS_LANES_AVX2 / FS_LANES_AVX512: the
// wrapper is flattened, every call in it (the template and V's functions)
// inlined into it and compiled for its target. No vector is ever passed in a
// call, so GCC's note on how one would be (-Wpsabi) is off where this is included.
#pragma once

#include "fastspec/cpu_features.h"

#if FASTSPEC_X86
#include <immintrin.h>

#include <cstdint>

#define FS_LANES_AVX2 FS_TARGET_AVX2 __attribute__((flatten))
#define FS_LANES_AVX512 FS_TARGET_AVX512 __attribute__((flatten))
#pragma GCC diagnostic ignored "-Wpsabi"

namespace fastspec {

struct Avx2Lanes {
  static constexpr int kLanes = 8;
  using F = __m256;
  using I = __m256i;
  using M = __m256i;  // all ones in a lane that is set

  FS_TARGET_AVX2 static F set1(float a) { return _mm256_set1_ps(a); }
  FS_TARGET_AVX2 static F load(const float* p) { return _mm256_loadu_ps(p); }
  FS_TARGET_AVX2 static void store(float* p, F a) { _mm256_storeu_ps(p, a); }
  FS_TARGET_AVX2 static F add(F a, F b) { return _mm256_add_ps(a, b); }
  FS_TARGET_AVX2 static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  FS_TARGET_AVX2 static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  FS_TARGET_AVX2 static F max(F a, F b) { return _mm256_max_ps(a, b); }  // b where either is NaN
  FS_TARGET_AVX2 static M ge(F a, F b) { return _mm256_castps_si256(_mm256_cmp_ps(a, b, _CMP_GE_OQ)); }
  FS_TARGET_AVX2 static M is_nan(F a) { return _mm256_castps_si256(_mm256_cmp_ps(a, a, _CMP_UNORD_Q)); }
  FS_TARGET_AVX2 static F keep(M m, F a) { return _mm256_and_ps(_mm256_castsi256_ps(m), a); }  // 0 elsewhere
  // 2^n for integer-valued lanes n whose power of two is a normal float.
  FS_TARGET_AVX2 static F pow2(F n) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(n), _mm256_set1_epi32(127)), 23));
  }

  FS_TARGET_AVX2 static M no_lanes() { return _mm256_setzero_si256(); }
  FS_TARGET_AVX2 static M either(M a, M b) { return _mm256_or_si256(a, b); }
  FS_TARGET_AVX2 static bool any(M m) { return _mm256_movemask_ps(_mm256_castsi256_ps(m)) != 0; }

  FS_TARGET_AVX2 static I set1(int32_t a) { return _mm256_set1_epi32(a); }
  FS_TARGET_AVX2 static I widen_u16(const uint16_t* p) {  // 8 uint16 as int32
    return _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  FS_TARGET_AVX2 static I add(I a, I b) { return _mm256_add_epi32(a, b); }
  FS_TARGET_AVX2 static I bit_and(I a, I b) { return _mm256_and_si256(a, b); }
  FS_TARGET_AVX2 static I bit_or(I a, I b) { return _mm256_or_si256(a, b); }
  template <int kBits>
  FS_TARGET_AVX2 static I shl(I a) {
    return _mm256_slli_epi32(a, kBits);
  }
  template <int kBits>
  FS_TARGET_AVX2 static I shr(I a) {  // logical
    return _mm256_srli_epi32(a, kBits);
  }
  FS_TARGET_AVX2 static M eq(I a, I b) { return _mm256_cmpeq_epi32(a, b); }
  FS_TARGET_AVX2 static I select(M m, I yes, I no) { return _mm256_blendv_epi8(no, yes, m); }
  FS_TARGET_AVX2 static F to_float(I a) { return _mm256_cvtepi32_ps(a); }
  FS_TARGET_AVX2 static I bits(F a) { return _mm256_castps_si256(a); }
};

struct Avx512Lanes {
  static constexpr int kLanes = 16;
  using F = __m512;
  using I = __m512i;
  using M = __mmask16;

  FS_TARGET_AVX512 static F set1(float a) { return _mm512_set1_ps(a); }
  FS_TARGET_AVX512 static F load(const float* p) { return _mm512_loadu_ps(p); }
  FS_TARGET_AVX512 static void store(float* p, F a) { _mm512_storeu_ps(p, a); }
  FS_TARGET_AVX512 static F add(F a, F b) { return _mm512_add_ps(a, b); }
  FS_TARGET_AVX512 static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  FS_TARGET_AVX512 static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  FS_TARGET_AVX512 static F max(F a, F b) { return _mm512_max_ps(a, b); }  // b where either is NaN
  FS_TARGET_AVX512 static M ge(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ); }
  FS_TARGET_AVX512 static M is_nan(F a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
  FS_TARGET_AVX512 static F keep(M m, F a) { return _mm512_maskz_mov_ps(m, a); }  // 0 elsewhere
  // 2^n for integer-valued lanes n whose power of two is a normal float.
  FS_TARGET_AVX512 static F pow2(F n) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvttps_epi32(n), _mm512_set1_epi32(127)), 23));
  }

  FS_TARGET_AVX512 static M no_lanes() { return 0; }
  FS_TARGET_AVX512 static M either(M a, M b) { return a | b; }
  FS_TARGET_AVX512 static bool any(M m) { return m != 0; }

  FS_TARGET_AVX512 static I set1(int32_t a) { return _mm512_set1_epi32(a); }
  FS_TARGET_AVX512 static I widen_u16(const uint16_t* p) {  // 16 uint16 as int32
    return _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  FS_TARGET_AVX512 static I add(I a, I b) { return _mm512_add_epi32(a, b); }
  FS_TARGET_AVX512 static I bit_and(I a, I b) { return _mm512_and_si512(a, b); }
  FS_TARGET_AVX512 static I bit_or(I a, I b) { return _mm512_or_si512(a, b); }
  template <int kBits>
  FS_TARGET_AVX512 static I shl(I a) {
    return _mm512_slli_epi32(a, kBits);
  }
  template <int kBits>
  FS_TARGET_AVX512 static I shr(I a) {  // logical
    return _mm512_srli_epi32(a, kBits);
  }
  FS_TARGET_AVX512 static M eq(I a, I b) { return _mm512_cmpeq_epi32_mask(a, b); }
  FS_TARGET_AVX512 static I select(M m, I yes, I no) { return _mm512_mask_mov_epi32(no, m, yes); }
  FS_TARGET_AVX512 static F to_float(I a) { return _mm512_cvtepi32_ps(a); }
  FS_TARGET_AVX512 static I bits(F a) { return _mm512_castps_si512(a); }
};

}  // namespace fastspec

#endif  // FASTSPEC_X86

// The loads of the SIMD sampling passes, written once over simd_lanes.h's V
// (Avx2Lanes, Avx512Lanes): V::kLanes probabilities as the f32 bits that
// sampling_scalar.h orders them by (bf16 bits << 16; fp16 widened as
// f16_to_f32_bits), in integers and one exact product: the same bits at
// either width. Called from FS_LANES_AVX2 / FS_LANES_AVX512 functions only.
#pragma once

#include "fastspec/cpu_features.h"

#if FASTSPEC_X86
#include <immintrin.h>

#include <cstdint>

#include "fastspec/sampling.h"
#include "simd_lanes.h"

namespace fastspec {
namespace {

template <typename V>
typename V::U f32_bits(F32Tag, const float* p) {
  return V::bits(V::load(p));
}

template <typename V>
typename V::U f32_bits(BF16Tag, const uint16_t* p) {
  return V::widen(p) << 16;
}

template <typename V>
typename V::U f32_bits(F16Tag, const uint16_t* p) {
  using U = typename V::U;
  const U h = V::widen(p);
  const U exp = (h >> 10) & 0x1f;
  const U mant = h & 0x3ff;
  const U normal = ((exp + 112) << 23) | (mant << 13);
  const U infnan = 0x7f800000 | (mant << 13);
  const U subnormal = V::bits(V::to_float(mant) * 5.9604644775390625e-08f);  // mant * 2^-24, exact; 0 stays 0
  const U magnitude = exp == 0x1f ? infnan : exp != 0 ? normal : subnormal;
  return ((h & 0x8000) << 16) | magnitude;
}

// prob_key of V::kLanes entries: their f32 bits where these lie in [1, 0x7f7fffff], else 0.
template <typename V, typename Tag>
typename V::U keys(const typename Tag::T* p) {
  const typename V::U bits = f32_bits<V>(Tag{}, p);
  return bits - 1 < 0x7f7fffff ? bits : 0;
}

// The same as intrinsics' vectors, for the passes of sampling_avx2.h and sampling_avx512.h.
template <typename Tag>
FS_LANES_AVX2 __m256i keys8(const typename Tag::T* p) {
  return __builtin_bit_cast(__m256i, keys<Avx2Lanes, Tag>(p));
}
template <typename Tag>
FS_LANES_AVX512 __m512i keys16(const typename Tag::T* p) {
  return __builtin_bit_cast(__m512i, keys<Avx512Lanes, Tag>(p));
}

}  // namespace
}  // namespace fastspec

#endif  // FASTSPEC_X86

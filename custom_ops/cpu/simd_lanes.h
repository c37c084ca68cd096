// SIMD lanes as one type per width, so that a CPU pass is written once for
// AVX2 and AVX-512: Lanes<8> (Avx2Lanes) and Lanes<16> (Avx512Lanes) hold
// float32 (F), int32 (I) and uint32 (U) lanes as GCC vector types, whose operators work
// lane by lane as the scalar ones do (IEEE arithmetic, no contraction under
// -ffp-contract=off), so a pass keeps the scalar code's bits at either width.
// A comparison gives an I mask (all ones where true); `mask ? a : b` picks per
// lane; an operand that is a scalar stands for every lane.
//
// The instructions come from the function the lanes are used in, so a pass
// written over V runs inside a wrapper of its level marked FS_LANES_AVX2 /
// FS_LANES_AVX512: the wrapper is flattened, every call in it inlined and
// compiled for its target. No vector is ever passed in a call, so GCC's note on
// how one would be (-Wpsabi) is off where this is included.
#pragma once

#include "fastspec/cpu_features.h"

#if FASTSPEC_X86
#include <cstdint>
#include <cstring>

#define FS_LANES_AVX2 FS_TARGET_AVX2 __attribute__((flatten))
#define FS_LANES_AVX512 FS_TARGET_AVX512 __attribute__((flatten))
#pragma GCC diagnostic ignored "-Wpsabi"

namespace fastspec {

template <typename T, int kCount>
struct VectorOf {
  typedef T type __attribute__((vector_size(sizeof(T) * kCount)));
};

template <int N>
struct Lanes {
  static constexpr int kLanes = N;
  using F = typename VectorOf<float, N>::type;
  using I = typename VectorOf<int32_t, N>::type;
  using U = typename VectorOf<uint32_t, N>::type;

  static F splat(float a) {
    F v;
    for (int i = 0; i < N; ++i) v[i] = a;
    return v;
  }
  static F load(const float* p) {
    F v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static void store(float* p, F a) { std::memcpy(p, &a, sizeof a); }
  static U widen(const uint16_t* p) {  // N uint16 as uint32
    typename VectorOf<uint16_t, N>::type h;
    std::memcpy(&h, p, sizeof h);
    return __builtin_convertvector(h, U);
  }
  static U bits(F a) { return __builtin_bit_cast(U, a); }
  static F from_bits(I a) { return __builtin_bit_cast(F, a); }
  static I truncate(F a) { return __builtin_convertvector(a, I); }  // lanes within int32's range
  static F to_float(U a) { return __builtin_convertvector(__builtin_bit_cast(I, a), F); }  // lanes below 2^31
  static bool any(I mask) {  // once per row, not per element
    for (int i = 0; i < N; ++i) {
      if (mask[i]) return true;
    }
    return false;
  }
};

using Avx2Lanes = Lanes<8>;
using Avx512Lanes = Lanes<16>;

}  // namespace fastspec

#endif  // FASTSPEC_X86

// One way to pick a CPU kernel's SIMD version: give each version an overload
// taking its level's tag, and call through with_simd_level. The tags derive
// from each other, so a level without its own overload runs the next narrower
// one (an AVX-512 CPU runs an AVX2-only pass's AVX2 version).
#pragma once

#include "fastspec/cpu_features.h"

namespace fastspec {

struct Scalar {};           // the portable loops: the reference the others match bit for bit
struct Avx2 : Scalar {};    // FS_TARGET_AVX2 functions
struct Avx512 : Avx2 {};    // FS_TARGET_AVX512 functions (AVX-512 F and DQ)

// fn(level) with the widest level this CPU and FASTSPEC_SIMD allow
// (simd_level(), a cached value: call once per row, never per element).
template <typename Fn>
auto with_simd_level(const Fn& fn) {
#if FASTSPEC_X86
  const SimdLevel level = simd_level();
  if (level == kSimdAvx512) return fn(Avx512{});
  if (level >= kSimdAvx2) return fn(Avx2{});
#endif
  return fn(Scalar{});
}

}  // namespace fastspec

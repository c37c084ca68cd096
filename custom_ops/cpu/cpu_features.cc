// simd_level(): the CPU's features, capped by FASTSPEC_SIMD, resolved once.
#include "fastspec/cpu_features.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fastspec {
namespace {

// The cap FASTSPEC_SIMD asks for; an unknown value is reported and ignored.
SimdLevel requested_cap() {
  const char* value = std::getenv("FASTSPEC_SIMD");
  if (value == nullptr || *value == '\0' || std::strcmp(value, "auto") == 0 || std::strcmp(value, "avx512") == 0) {
    return kSimdAvx512;
  }
  static const char* const kOff[] = {"off", "scalar", "none", "0"};
  for (const char* off : kOff) {
    if (std::strcmp(value, off) == 0) return kSimdScalar;
  }
  if (std::strcmp(value, "avx2") == 0) return kSimdAvx2;
  std::fprintf(stderr, "fastspec: FASTSPEC_SIMD=%s is not one of off, avx2, avx512, auto; ignored\n", value);
  return kSimdAvx512;
}

SimdLevel resolve() {
  const SimdLevel cpu = cpu_simd_level();
  const SimdLevel cap = requested_cap();
  return cpu < cap ? cpu : cap;
}

}  // namespace

// The operating system must also save the wider registers: __builtin_cpu_supports checks both.
SimdLevel cpu_simd_level() {
#if FASTSPEC_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")) return kSimdAvx512;
  if (__builtin_cpu_supports("avx2")) return kSimdAvx2;
#endif
  return kSimdScalar;
}

SimdLevel simd_level() {
  static const SimdLevel level = resolve();
  return level;
}

const char* simd_level_name(SimdLevel level) {
  switch (level) {
    case kSimdAvx512:
      return "avx512";
    case kSimdAvx2:
      return "avx2";
    default:
      return "scalar";
  }
}

}  // namespace fastspec

extern "C" int fastspec_simd_level() { return static_cast<int>(fastspec::simd_level()); }
extern "C" const char* fastspec_simd_name() { return fastspec::simd_level_name(fastspec::simd_level()); }

// Which SIMD code the CPU kernels run. The libraries are built for the
// architecture's baseline (x86-64: SSE2; aarch64: its base), so they load on
// any CPU of that architecture; the AVX2 and AVX-512 versions of the hot
// loops are compiled in beside the portable ones (GCC target attributes) and
// one of them is chosen at run time from the CPU's features.
//
// FASTSPEC_SIMD caps the choice, read once at first use:
//   off (or scalar, none, 0)   the portable loops only
//   avx2                       AVX2 at most
//   avx512, auto or unset      the best the CPU has
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#define FASTSPEC_X86 1
// Functions compiled for a wider instruction set than the build's baseline;
// they are called only after simd_level() has found that set on the CPU.
#define FS_TARGET_AVX2 __attribute__((target("avx2")))
#define FS_TARGET_AVX512 __attribute__((target("avx512f,avx512dq")))
#else
#define FASTSPEC_X86 0
#endif

namespace fastspec {

enum SimdLevel : int {
  kSimdScalar = 0,  // portable C++ (what the compiler makes of it for the baseline)
  kSimdAvx2 = 1,    // x86 AVX2
  kSimdAvx512 = 2,  // x86 AVX-512 F and DQ
};

// The level in use: the best the CPU supports, capped by FASTSPEC_SIMD.
// Resolved once (thread-safe); later calls return the cached value.
SimdLevel simd_level();

// The best level this CPU (and its operating system) supports, whatever
// FASTSPEC_SIMD says.
SimdLevel cpu_simd_level();

// "scalar", "avx2" or "avx512".
const char* simd_level_name(SimdLevel level);

}  // namespace fastspec

// The same, for a caller without C++ (Python's ctypes): the level as an int
// and its name.
extern "C" __attribute__((visibility("default"))) int fastspec_simd_level();
extern "C" __attribute__((visibility("default"))) const char* fastspec_simd_name();

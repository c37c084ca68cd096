// float32 arithmetic every backend rounds alike: each product, sum, difference and
// quotient is its own rounded operation (no fused multiply-add: the __f*_rn
// intrinsics on CUDA; -ffp-contract=off for g++ and the XTDK's clang, set by
// setup_ops.py: GCC's default fuses a product and a sum wherever the target has
// FMA, as the AVX-512 functions do).
#pragma once

#include <cstdint>

#include "fastspec/common.h"

namespace fastspec {

FS_HD float mul_f32(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
FS_HD float add_f32(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
FS_HD float sub_f32(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
FS_HD float div_f32(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
// An integer as float32, rounded to nearest even (as numpy's float32(n)).
FS_HD float int_to_f32(int64_t n) {
#if defined(__CUDA_ARCH__)
  return __ll2float_rn(n);
#else
  return static_cast<float>(n);
#endif
}
FS_HD bool is_nan_f32(float x) { return x != x; }

}  // namespace fastspec

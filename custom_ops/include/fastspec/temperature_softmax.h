// temperature_softmax: parameters, the arithmetic every backend shares, and the
// launcher declarations. Semantics: docs/ops/temperature_softmax.md; the numpy
// twin is fastspec/reference/softmax.py.
//
// Bit-identical on every backend because nothing is left to a library or to a
// schedule: exp is our own (softmax_exp: a fixed range reduction and polynomial,
// each float32 operation rounded on its own through float_ops.h), the maximum is
// exact whatever the order, and the sum has a fixed shape: entry v goes to lane
// v % kSoftmaxLanes, each lane adds its entries in increasing v, and the lanes are
// folded pairwise (lane j += lane j + w, w = 128, 64, ..., 1), which is what a
// CUDA block of 256 threads does in shared memory and what the CPU's vectors do
// 8 or 16 lanes at a time.
#pragma once

#include <cstdint>

#include "fastspec/common.h"
#include "fastspec/float_ops.h"

namespace fastspec {

struct TemperatureSoftmaxParams {
  const float* logits;                       // [T, V] float32
  const float* temperature;                  // [B] float32
  const int32_t* batch_id_per_token_output;  // [T] int32
  float* probs;                              // [T, V] float32, new
  int64_t rows;                              // T
  int64_t vocab;                             // V
  int64_t batch;                             // B
};

constexpr int kSoftmaxLanes = 256;  // partial sums of a row; a power of two
constexpr float kFloat32Max = 3.4028234663852886e38f;
constexpr float kFloat32MinNormal = 1.17549435082228751e-38f;  // 2^-126

// exp(x) for x <= 0 (x is a logit minus the row's maximum). Below kSoftmaxExpFloor
// it is 0, so every probability stays a normal float32 (never a subnormal that a
// flush-to-zero mode would treat differently): e^-64 / 2^31 > 2^-126.
constexpr float kSoftmaxExpFloor = -64.0f;
constexpr float kLog2e = 1.44269502162933349609375f;  // float32(log2(e))
constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23: (k + m) - m rounds k to an integer, ties to even
constexpr float kLn2Hi = 0.693359375f;  // ln 2 = kLn2Hi + kLn2Lo; n * kLn2Hi is exact for |n| < 2^15
constexpr float kLn2Lo = -2.12194440e-4f;
// exp(r) - 1 - r ~ r^2 (c0 + c1 r + ... + c5 r^5) on [-ln2 / 2, ln2 / 2] (Cephes' expf coefficients)
constexpr float kExpC0 = 5.0000001201e-1f;
constexpr float kExpC1 = 1.6666665459e-1f;
constexpr float kExpC2 = 4.1665795894e-2f;
constexpr float kExpC3 = 8.3334519073e-3f;
constexpr float kExpC4 = 1.3981999507e-3f;
constexpr float kExpC5 = 1.9875691500e-4f;

FS_HD float bits_to_f32(uint32_t bits) {
  union {
    uint32_t u;
    float f;
  } v;
  v.u = bits;
  return v.f;
}

// The one exp of the op: n = round(x log2 e), r = x - n ln2 (two steps), e^r by
// the polynomial, times 2^n written as bits. The SIMD versions (cpu/) run the same
// operations in the same order, lane by lane.
FS_HD float softmax_exp(float x) {
  if (!(x >= kSoftmaxExpFloor)) return 0.0f;
  const float n = sub_f32(add_f32(mul_f32(x, kLog2e), kRoundMagic), kRoundMagic);
  float r = sub_f32(x, mul_f32(n, kLn2Hi));
  r = sub_f32(r, mul_f32(n, kLn2Lo));
  float p = kExpC5;
  p = add_f32(mul_f32(p, r), kExpC4);
  p = add_f32(mul_f32(p, r), kExpC3);
  p = add_f32(mul_f32(p, r), kExpC2);
  p = add_f32(mul_f32(p, r), kExpC1);
  p = add_f32(mul_f32(p, r), kExpC0);
  const float y = add_f32(add_f32(mul_f32(p, mul_f32(r, r)), r), 1.0f);
  const int32_t e = static_cast<int32_t>(n) + 127;  // n in [-93, 0]: a normal power of two
  return mul_f32(y, bits_to_f32(static_cast<uint32_t>(e) << 23));
}

// log(x) for a positive normal float32 x (emitted_logprobs takes it of a row's sum,
// which is >= 1): x = 2^k f with f in [sqrt(1/2), sqrt(2)), z = f - 1, log f by
// z - z^2 / 2 + z^3 P(z) (Cephes' logf coefficients), plus k ln2 in two steps.
constexpr float kSqrtHalf = 0.707106781186547524f;
constexpr float kLogC8 = 7.0376836292e-2f;
constexpr float kLogC7 = -1.1514610310e-1f;
constexpr float kLogC6 = 1.1676998740e-1f;
constexpr float kLogC5 = -1.2420140846e-1f;
constexpr float kLogC4 = 1.4249322787e-1f;
constexpr float kLogC3 = -1.6668057665e-1f;
constexpr float kLogC2 = 2.0000714765e-1f;
constexpr float kLogC1 = -2.4999993993e-1f;
constexpr float kLogC0 = 3.3333331174e-1f;

FS_HD uint32_t f32_to_bits(float x) {
  union {
    float f;
    uint32_t u;
  } v;
  v.f = x;
  return v.u;
}

FS_HD float softmax_log(float x) {
  const uint32_t bits = f32_to_bits(x);
  int32_t k = static_cast<int32_t>((bits >> 23) & 0xffu) - 126;
  float f = bits_to_f32((bits & 0x7fffffu) | (126u << 23));  // in [0.5, 1)
  if (f < kSqrtHalf) {
    k -= 1;
    f = sub_f32(add_f32(f, f), 1.0f);
  } else {
    f = sub_f32(f, 1.0f);
  }
  const float z = mul_f32(f, f);
  float p = kLogC8;
  p = add_f32(mul_f32(p, f), kLogC7);
  p = add_f32(mul_f32(p, f), kLogC6);
  p = add_f32(mul_f32(p, f), kLogC5);
  p = add_f32(mul_f32(p, f), kLogC4);
  p = add_f32(mul_f32(p, f), kLogC3);
  p = add_f32(mul_f32(p, f), kLogC2);
  p = add_f32(mul_f32(p, f), kLogC1);
  p = add_f32(mul_f32(p, f), kLogC0);
  const float kf = int_to_f32(k);
  float y = mul_f32(mul_f32(p, f), z);
  y = add_f32(y, mul_f32(kf, kLn2Lo));
  y = sub_f32(y, mul_f32(0.5f, z));
  return add_f32(add_f32(f, y), mul_f32(kf, kLn2Hi));
}

// 1 / the temperature a row divides its logits by: its request's when that is a
// finite normal number > 0 (so 1 / t is finite), else 1 (temperature 0 is a greedy
// request's: its argmax is the same at any temperature).
FS_HD float softmax_inverse_temperature(float temperature) {
  return temperature >= kFloat32MinNormal && temperature <= kFloat32Max ? div_f32(1.0f, temperature) : 1.0f;
}

// A row has probabilities iff no logit is NaN and its maximum times the inverse
// temperature is finite (not +inf, an overflow included; not -inf: no finite logit).
FS_HD bool softmax_row_valid(float scaled_max, bool has_nan) {
  return !has_nan && scaled_max >= -kFloat32Max && scaled_max <= kFloat32Max;
}

// The lanes' fold: lane j += lane j + w for w = kSoftmaxLanes / 2, ..., 1; lane 0 is the sum.
FS_HD float fold_softmax_lanes(float* lanes) {
  for (int w = kSoftmaxLanes / 2; w >= 1; w >>= 1) {
    for (int j = 0; j < w; ++j) lanes[j] = add_f32(lanes[j], lanes[j + w]);
  }
  return lanes[0];
}

FS_HD bool softmax_sizes_ok(const TemperatureSoftmaxParams& p) { return p.rows >= 0 && p.vocab >= 1 && p.batch >= 1; }

// CPU: a row by one thread (SIMD: 8 or 16 lanes of the 256 at a time); rows over
// the pool from 2^18 entries. Returns kOk.
// XPU: a row per core, rows strided over the grid; the row's 256 lanes in LM.
// CUDA: a block of 256 threads per row (thread j owns lane j). No allocation, no
// host synchronisation: safe inside CUDA Graph capture.
FASTSPEC_LAUNCHERS(temperature_softmax, TemperatureSoftmaxParams);

}  // namespace fastspec

// The row passes temperature_softmax and emitted_logprobs share on the CPU: a row's
// maximum (and a NaN flag), exp(x * inv_t - m) into the output and the 256 lane sums
// of temperature_softmax.h, and the scale by a factor. The AVX2 and AVX-512 versions
// run the scalar operations 8 or 16 lanes at a time, each lane as the scalar code
// would: the same bits at every level.
#pragma once

#include <cstdint>

#include "fastspec/temperature_softmax.h"
#include "simd.h"
#include "simd_lanes.h"

namespace fastspec {
namespace {  // each kernel file its own copy: the functions carry its target attributes

struct RowMax {
  float max;
  bool nan;
};

// -- portable ---------------------------------------------------------------------------

RowMax row_max(Scalar, const float* x, int64_t n) {
  float m = -__builtin_inff();
  bool nan = false;
  for (int64_t v = 0; v < n; ++v) {
    nan |= is_nan_f32(x[v]);
    m = x[v] > m ? x[v] : m;
  }
  return {m, nan};
}

// out[v] = exp(x[v] * inv_t - m); lanes[v % 256] += out[v], from `from` to n (the row's tail at any level).
void exp_entries(const float* x, float* out, int64_t from, int64_t n, float inv_t, float m, float* lanes) {
  for (int64_t v = from; v < n; ++v) {
    const float e = softmax_exp(sub_f32(mul_f32(x[v], inv_t), m));
    out[v] = e;
    lanes[v % kSoftmaxLanes] = add_f32(lanes[v % kSoftmaxLanes], e);
  }
}

void exp_row(Scalar, const float* x, float* out, int64_t n, float inv_t, float m, float* lanes) {
  exp_entries(x, out, 0, n, inv_t, m, lanes);
}

void scale_row(Scalar, float* out, int64_t n, float s) {
  for (int64_t v = 0; v < n; ++v) out[v] = mul_f32(out[v], s);
}

#if FASTSPEC_X86
// -- AVX2 and AVX-512: V's lanes each run the scalar operations above ---------------------

template <typename V>
RowMax row_max_lanes(const float* x, int64_t n) {
  typename V::F m = V::splat(-__builtin_inff());
  typename V::I nan = {};
  int64_t v = 0;
  for (; v + V::kLanes <= n; v += V::kLanes) {
    const typename V::F a = V::load(x + v);
    nan |= a != a;
    m = a > m ? a : m;  // a NaN in `a` keeps m
  }
  alignas(64) float lanes[V::kLanes];
  V::store(lanes, m);
  RowMax tail = row_max(Scalar{}, x + v, n - v);
  for (float lane : lanes) tail.max = lane > tail.max ? lane : tail.max;
  tail.nan |= V::any(nan);
  return tail;
}

// softmax_exp of V's lanes: the scalar operations in the same order; lanes below the floor are 0.
template <typename V>
typename V::F exp_lanes(typename V::F x) {
  using F = typename V::F;
  const F n = x * kLog2e + kRoundMagic - kRoundMagic;
  F r = x - n * kLn2Hi;
  r = r - n * kLn2Lo;
  F p = V::splat(kExpC5);
  for (const float c : {kExpC4, kExpC3, kExpC2, kExpC1, kExpC0}) p = p * r + c;
  const F y = p * (r * r) + r + 1.0f;
  const F e = y * V::from_bits((V::truncate(n) + 127) << 23);  // n in [-93, 0]: a normal power of two
  return x >= kSoftmaxExpFloor ? e : F{};
}

template <typename V>
void exp_row_lanes(const float* x, float* out, int64_t n, float inv_t, float m, float* lanes) {
  int64_t v = 0;
  for (; v + V::kLanes <= n; v += V::kLanes) {
    const typename V::F e = exp_lanes<V>(V::load(x + v) * inv_t - m);
    V::store(out + v, e);
    float* lane = lanes + v % kSoftmaxLanes;
    V::store(lane, V::load(lane) + e);
  }
  exp_entries(x, out, v, n, inv_t, m, lanes);
}

template <typename V>
void scale_row_lanes(float* out, int64_t n, float s) {
  int64_t v = 0;
  for (; v + V::kLanes <= n; v += V::kLanes) V::store(out + v, V::load(out + v) * s);
  scale_row(Scalar{}, out + v, n - v, s);
}

FS_LANES_AVX2 RowMax row_max(Avx2, const float* x, int64_t n) { return row_max_lanes<Avx2Lanes>(x, n); }
FS_LANES_AVX2 void exp_row(Avx2, const float* x, float* out, int64_t n, float inv_t, float m, float* lanes) {
  exp_row_lanes<Avx2Lanes>(x, out, n, inv_t, m, lanes);
}
FS_LANES_AVX2 void scale_row(Avx2, float* out, int64_t n, float s) { scale_row_lanes<Avx2Lanes>(out, n, s); }

FS_LANES_AVX512 RowMax row_max(Avx512, const float* x, int64_t n) { return row_max_lanes<Avx512Lanes>(x, n); }
FS_LANES_AVX512 void exp_row(Avx512, const float* x, float* out, int64_t n, float inv_t, float m, float* lanes) {
  exp_row_lanes<Avx512Lanes>(x, out, n, inv_t, m, lanes);
}
FS_LANES_AVX512 void scale_row(Avx512, float* out, int64_t n, float s) { scale_row_lanes<Avx512Lanes>(out, n, s); }
#endif

}  // namespace
}  // namespace fastspec

// The row passes temperature_softmax and emitted_logprobs share on the CPU: a row's
// maximum (and a NaN flag), and exp(x * inv_t - m) into the output and the 256 lane
// sums of temperature_softmax.h, and the scale by a factor. The AVX2 and AVX-512
// versions run the scalar operations 8 or 16 lanes at a time, each lane as the
// scalar code would: the same bits at every level.
#pragma once

#include <cstdint>

#include "fastspec/temperature_softmax.h"
#include "simd.h"

#if FASTSPEC_X86
#include <immintrin.h>
#endif

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
// -- AVX2 -------------------------------------------------------------------------------

FS_TARGET_AVX2 RowMax row_max(Avx2, const float* x, int64_t n) {
  __m256 m = _mm256_set1_ps(-__builtin_inff());
  __m256 nan = _mm256_setzero_ps();
  int64_t v = 0;
  for (; v + 8 <= n; v += 8) {
    const __m256 a = _mm256_loadu_ps(x + v);
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
    m = _mm256_max_ps(a, m);  // a NaN in `a` keeps m
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m);
  RowMax tail = row_max(Scalar{}, x + v, n - v);
  for (float lane : lanes) tail.max = lane > tail.max ? lane : tail.max;
  tail.nan |= _mm256_movemask_ps(nan) != 0;
  return tail;
}

// softmax_exp of 8 lanes: the scalar operations in the same order; lanes below the floor are 0.
FS_TARGET_AVX2 inline __m256 exp8(__m256 x) {
  const __m256 keep = _mm256_cmp_ps(x, _mm256_set1_ps(kSoftmaxExpFloor), _CMP_GE_OQ);
  const __m256 magic = _mm256_set1_ps(kRoundMagic);
  const __m256 n = _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)), magic), magic);
  __m256 r = _mm256_sub_ps(x, _mm256_mul_ps(n, _mm256_set1_ps(kLn2Hi)));
  r = _mm256_sub_ps(r, _mm256_mul_ps(n, _mm256_set1_ps(kLn2Lo)));
  __m256 p = _mm256_set1_ps(kExpC5);
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(kExpC4));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(kExpC3));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(kExpC2));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(kExpC1));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(kExpC0));
  const __m256 y = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(p, _mm256_mul_ps(r, r)), r), _mm256_set1_ps(1.0f));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_and_ps(_mm256_mul_ps(y, _mm256_castsi256_ps(e)), keep);
}

FS_TARGET_AVX2 void exp_row(Avx2, const float* x, float* out, int64_t n, float inv_t, float m, float* lanes) {
  const __m256 vt = _mm256_set1_ps(inv_t), vm = _mm256_set1_ps(m);
  int64_t v = 0;
  for (; v + 8 <= n; v += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_mul_ps(_mm256_loadu_ps(x + v), vt), vm));
    _mm256_storeu_ps(out + v, e);
    float* lane = lanes + v % kSoftmaxLanes;
    _mm256_storeu_ps(lane, _mm256_add_ps(_mm256_loadu_ps(lane), e));
  }
  exp_entries(x, out, v, n, inv_t, m, lanes);
}

FS_TARGET_AVX2 void scale_row(Avx2, float* out, int64_t n, float s) {
  const __m256 vs = _mm256_set1_ps(s);
  int64_t v = 0;
  for (; v + 8 <= n; v += 8) _mm256_storeu_ps(out + v, _mm256_mul_ps(_mm256_loadu_ps(out + v), vs));
  scale_row(Scalar{}, out + v, n - v, s);
}

// -- AVX-512 ----------------------------------------------------------------------------

FS_TARGET_AVX512 RowMax row_max(Avx512, const float* x, int64_t n) {
  __m512 m = _mm512_set1_ps(-__builtin_inff());
  __mmask16 nan = 0;
  int64_t v = 0;
  for (; v + 16 <= n; v += 16) {
    const __m512 a = _mm512_loadu_ps(x + v);
    nan |= _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q);
    m = _mm512_max_ps(a, m);
  }
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, m);
  RowMax tail = row_max(Scalar{}, x + v, n - v);
  for (float lane : lanes) tail.max = lane > tail.max ? lane : tail.max;
  tail.nan |= nan != 0;
  return tail;
}

FS_TARGET_AVX512 inline __m512 exp16(__m512 x) {
  const __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(kSoftmaxExpFloor), _CMP_GE_OQ);
  const __m512 magic = _mm512_set1_ps(kRoundMagic);
  const __m512 n = _mm512_sub_ps(_mm512_add_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)), magic), magic);
  __m512 r = _mm512_sub_ps(x, _mm512_mul_ps(n, _mm512_set1_ps(kLn2Hi)));
  r = _mm512_sub_ps(r, _mm512_mul_ps(n, _mm512_set1_ps(kLn2Lo)));
  __m512 p = _mm512_set1_ps(kExpC5);
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(kExpC4));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(kExpC3));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(kExpC2));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(kExpC1));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(kExpC0));
  const __m512 y = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(p, _mm512_mul_ps(r, r)), r), _mm512_set1_ps(1.0f));
  const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvttps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_maskz_mul_ps(keep, y, _mm512_castsi512_ps(e));
}

FS_TARGET_AVX512 void exp_row(Avx512, const float* x, float* out, int64_t n, float inv_t, float m, float* lanes) {
  const __m512 vt = _mm512_set1_ps(inv_t), vm = _mm512_set1_ps(m);
  int64_t v = 0;
  for (; v + 16 <= n; v += 16) {
    const __m512 e = exp16(_mm512_sub_ps(_mm512_mul_ps(_mm512_loadu_ps(x + v), vt), vm));
    _mm512_storeu_ps(out + v, e);
    float* lane = lanes + v % kSoftmaxLanes;
    _mm512_storeu_ps(lane, _mm512_add_ps(_mm512_loadu_ps(lane), e));
  }
  exp_entries(x, out, v, n, inv_t, m, lanes);
}

FS_TARGET_AVX512 void scale_row(Avx512, float* out, int64_t n, float s) {
  const __m512 vs = _mm512_set1_ps(s);
  int64_t v = 0;
  for (; v + 16 <= n; v += 16) _mm512_storeu_ps(out + v, _mm512_mul_ps(_mm512_loadu_ps(out + v), vs));
  scale_row(Scalar{}, out + v, n - v, s);
}
#endif

}  // namespace
}  // namespace fastspec

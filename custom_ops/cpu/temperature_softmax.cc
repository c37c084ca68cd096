// temperature_softmax on the CPU: a row by one thread in three passes over it
// (the maximum and a NaN flag; exp into the output and into the 256 lane sums;
// the scale by 1 / sum), rows over the pool from 2^18 entries. The AVX2 and
// AVX-512 passes run the scalar operations of temperature_softmax.h 8 or 16 lanes
// at a time, each lane as the scalar code would: the same bits at every level.
#include "fastspec/temperature_softmax.h"

#include <cstring>

#include "fastspec/parallel.h"
#include "simd.h"
#include "simd_lanes.h"

namespace fastspec {
namespace {

constexpr int64_t kParallelEntries = int64_t{1} << 18;

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

template <typename Level>
void softmax_row(Level level, const TemperatureSoftmaxParams& a, int64_t t) {
  const float* x = a.logits + t * a.vocab;
  float* out = a.probs + t * a.vocab;
  const int32_t b = a.batch_id_per_token_output[t];
  if (b >= 0 && b < a.batch) {
    const float inv_t = softmax_inverse_temperature(a.temperature[b]);
    const RowMax raw = row_max(level, x, a.vocab);
    const float m = mul_f32(raw.max, inv_t);  // the scaled maximum: scaling by inv_t > 0 keeps the order
    if (softmax_row_valid(m, raw.nan)) {
      alignas(64) float lanes[kSoftmaxLanes] = {};
      exp_row(level, x, out, a.vocab, inv_t, m, lanes);
      scale_row(level, out, a.vocab, div_f32(1.0f, fold_softmax_lanes(lanes)));
      return;
    }
  }
  std::memset(out, 0, sizeof(float) * a.vocab);  // a padding row, or one without probabilities
}

}  // namespace

int temperature_softmax_cpu(const TemperatureSoftmaxParams& a) {
  if (!softmax_sizes_ok(a)) return kInvalidArgument;
  const auto run = [&](int64_t begin, int64_t end) {
    with_simd_level([&](auto level) {
      for (int64_t t = begin; t < end; ++t) softmax_row(level, a, t);
      return 0;
    });
  };
  if (a.rows > 1 && a.rows * a.vocab >= kParallelEntries) {
    parallel_for(a.rows, 1, run);
  } else {
    run(0, a.rows);
  }
  return kOk;
}

}  // namespace fastspec

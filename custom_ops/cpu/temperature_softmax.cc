// temperature_softmax on the CPU: a row by one thread in three passes over it
// (the maximum and a NaN flag; exp into the output and into the 256 lane sums;
// the scale by 1 / sum), rows over the pool from 2^18 entries. The passes, at
// every SIMD level, are softmax_rows.h's.
#include "fastspec/temperature_softmax.h"

#include <cstring>

#include "fastspec/parallel.h"
#include "softmax_rows.h"

namespace fastspec {
namespace {

constexpr int64_t kParallelEntries = int64_t{1} << 18;

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

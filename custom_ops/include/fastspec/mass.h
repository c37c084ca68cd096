// Fixed-point probability masses and the exact top-p threshold of docs/ops/conventions.md
// ("Arithmetic that makes the bits agree"). Every sum, cumulative sum and
// comparison of probabilities goes through these int64 masses, so the result
// does not depend on summation order, thread count or backend.
#pragma once

#include <cstdint>

#include "fastspec/common.h"
#include "fastspec/philox.h"

namespace fastspec {

constexpr float kMassScale = 1099511627776.0f;  // 2^40
constexpr uint64_t kToppOne = 1u << 24;         // top_p is quantised to q * 2^24

// A probability is valid iff finite and > 0 (NaN fails both comparisons).
FS_HD bool prob_valid(float p) { return p > 0.0f && p <= 3.4028234663852886e38f; }

// floor(min(p, 1) * 2^40) for a valid p, else 0. The product is a power-of-two
// scaling of an f32, so it is exact; the cast truncates a non-negative value.
FS_HD int64_t prob_mass(float p) {
  if (!prob_valid(p)) return 0;
  return static_cast<int64_t>((p < 1.0f ? p : 1.0f) * kMassScale);
}

// qi = max(1, round_half_even(q * 2^24)) with NaN or q > 1 read as 1.
FS_HD uint64_t topp_quantum(float top_p) {
  if (!(top_p <= 1.0f)) return kToppOne;  // NaN, > 1, +inf
  if (!(top_p > 0.0f)) return 1;           // <= 0, -inf
  // x = top_p * 2^24 is exact (a power-of-two scaling) and lies in (0, 2^24];
  // x - floor(x) is exact too, so the rounding below is exact integer logic
  // (no rint call, which the XPU has no library for).
  const float x = top_p * 16777216.0f;
  uint64_t qi = static_cast<uint64_t>(x);
  const float frac = x - static_cast<float>(qi);
  qi += (frac > 0.5f || (frac == 0.5f && (qi & 1u))) ? 1u : 0u;  // round half to even
  return qi < 1 ? 1 : qi;
}

// qi = round_half_even(q * 2^24) for min_p, with NaN or q <= 0 read as 0 (no
// cut) and q >= 1 as 2^24: unlike top_p, a quantum of 0 means "keep everything".
FS_HD uint64_t minp_quantum(float min_p) {
  if (!(min_p > 0.0f)) return 0;            // NaN, <= 0, -inf
  if (min_p >= 1.0f) return kToppOne;       // >= 1, +inf
  const float x = min_p * 16777216.0f;      // exact, as in topp_quantum
  uint64_t qi = static_cast<uint64_t>(x);
  const float frac = x - static_cast<float>(qi);
  qi += (frac > 0.5f || (frac == 0.5f && (qi & 1u))) ? 1u : 0u;
  return qi;                                // 0 for min_p up to 2^-25
}

// ceil(mass * qi / 2^24), exact through a 128-bit product (mul_hi64).
FS_HD int64_t mass_fraction_ceil(int64_t mass, uint64_t qi) {
  const uint64_t m = static_cast<uint64_t>(mass);
  const uint64_t lo = m * qi;
  const uint64_t hi = mul_hi64(m, qi);
  const uint64_t floor_div = (hi << 40) | (lo >> 24);
  return static_cast<int64_t>(floor_div + ((lo & (kToppOne - 1)) != 0));
}

// The top-p threshold of a set of mass total_mass: ceil(total * qi / 2^24).
FS_HD int64_t topp_threshold(int64_t total_mass, float top_p) {
  return mass_fraction_ceil(total_mass, topp_quantum(top_p));
}

// The min_p threshold of a row whose largest entry has mass max_mass: a token
// is kept iff its mass is at least ceil(max_mass * qi / 2^24) (0: every one).
FS_HD int64_t minp_threshold(int64_t max_mass, float min_p) {
  return mass_fraction_ceil(max_mass, minp_quantum(min_p));
}

// The index a draw lands on in a mass set of total `total_mass`: the first
// element whose cumulative mass exceeds the returned value (docs/ops/conventions.md "Drawing").
FS_HD uint64_t draw_point(uint64_t random, int64_t total_mass) {
  return scale_rand64(random, static_cast<uint64_t>(total_mass));
}

}  // namespace fastspec

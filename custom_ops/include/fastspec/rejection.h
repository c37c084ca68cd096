// REJECTION verification arithmetic (docs/ops/verify_draft_tokens.md "REJECTION",
// **REJECTION**), shared by every backend and by BLOCK (block_verify.h).
// Probability rows may be f32, f16 or bf16 (widened exactly to f32); every
// decision is made on int64 masses.
//
//   accept draft d at row t  iff  mq > 0 and ((rand64(seed, pos, ACCEPT) * mq) >> 64) < mp
//   after a rejection         a draw from max(mp_v - mq_v, 0), ascending ids (RESAMPLE);
//                             an empty residual draws from p instead
//   bonus                     a draw from mp_v, ascending ids (RESAMPLE)
// A draw with total mass 0 has no token (-1): the caller emits end_tokens[0].
// BLOCK draws its correction from the weighted residual max(w * mp_v - mq_v, 0)
// (w = kMassOne is REJECTION's residual), so every draw takes a weight.
#pragma once

#include <cstdint>

#include "fastspec/common.h"
#include "fastspec/mass.h"
#include "fastspec/philox.h"
#include "fastspec/sampling.h"

namespace fastspec {

struct RejectionRows {
  const void* target_probs;  // [T, V] p
  const void* draft_probs;   // [T, V] q
  int32_t dtype;             // ProbDtype of both
  int64_t vocab;             // V
};

// Mass of a probability stored as `dtype` (f32, or f16 / bf16 bits).
FS_HD int64_t prob_mass_of(const void* value, int32_t dtype) {
  return prob_mass(f32_from_bits(prob_bits_at(value, dtype)));
}

// Mass of element (t, v) of a [T, V] probability array of the given dtype.
FS_HD int64_t rejection_mass(const void* probs, int32_t dtype, int64_t vocab, int64_t t, int64_t v) {
  return prob_mass_of(static_cast<const char*>(probs) + (t * vocab + v) * prob_bytes(dtype), dtype);
}

// 1 in masses; a probability's mass is at most this.
constexpr int64_t kMassOne = int64_t{1} << 40;
// The weight of a draw from p itself (no residual).
constexpr int64_t kDrawTarget = -1;

// floor(w * m / 2^40) for 0 <= w, m <= 2^40, exact through a 128-bit product.
FS_HD int64_t mass_mul(int64_t w, int64_t m) {
  const uint64_t lo = static_cast<uint64_t>(w) * static_cast<uint64_t>(m);
  const uint64_t hi = mul_hi64(static_cast<uint64_t>(w), static_cast<uint64_t>(m));
  return static_cast<int64_t>((hi << 24) | (lo >> 40));
}

// The mass of one element in a draw: mp from p (weight kDrawTarget), else the
// residual max(w * mp - mq, 0) of weight w (kMassOne: REJECTION's max(mp - mq, 0)).
FS_HD int64_t rejection_draw_mass(int64_t mp, int64_t mq, int64_t weight) {
  if (weight < 0) return mp;
  const int64_t scaled = weight == kMassOne ? mp : mass_mul(weight, mp);
  return scaled > mq ? scaled - mq : 0;
}

FS_HD int64_t rejection_element_mass(const RejectionRows& r, int64_t t, int64_t v, int64_t weight) {
  const int64_t mp = rejection_mass(r.target_probs, r.dtype, r.vocab, t, v);
  if (weight < 0) return mp;
  return rejection_draw_mass(mp, rejection_mass(r.draft_probs, r.dtype, r.vocab, t, v), weight);
}

// The acceptance test from the draft's masses under p (mp) and q (mq).
FS_HD bool rejection_accepts_masses(int64_t mp, int64_t mq, int64_t seed, int64_t position) {
  if (mq <= 0) return false;
  const uint64_t a = draw_point(rand64(seed, position, kStreamAccept), mq);
  return a < static_cast<uint64_t>(mp);
}

// The acceptance test of draft d at row t (accept_all is the caller's).
FS_HD bool rejection_accepts(const RejectionRows& r, int64_t t, int64_t d, int64_t seed, int64_t position) {
  if (d < 0 || d >= r.vocab) return false;
  return rejection_accepts_masses(rejection_mass(r.target_probs, r.dtype, r.vocab, t, d),
                                  rejection_mass(r.draft_probs, r.dtype, r.vocab, t, d), seed, position);
}

// A draw over ascending ids 0 .. vocab - 1 of masses.at(v), of total `total`
// > 0 (stream RESAMPLE): the first id whose cumulative mass exceeds the point.
template <class Masses>
FS_HD int64_t draw_ascending(const Masses& masses, int64_t vocab, int64_t total, int64_t seed, int64_t position) {
  const uint64_t point = draw_point(rand64(seed, position, kStreamResample), total);
  uint64_t cumulative = 0;
  for (int64_t v = 0; v < vocab; ++v) {
    cumulative += static_cast<uint64_t>(masses.at(v));
    if (cumulative > point) return v;
  }
  return vocab - 1;  // unreachable: the cumulative total exceeds every point
}

// The masses of row t of weight `weight` (rejection_draw_mass: p, or a residual).
struct WeightedRow {
  const RejectionRows& r;
  int64_t t, weight;
  FS_HD int64_t at(int64_t v) const { return rejection_element_mass(r, t, v, weight); }
};

// A draw over ascending ids from the masses of row t of weight `weight`; -1
// when their total is 0. Serial (CPU, and a CUDA thread per slot).
FS_HD int64_t rejection_draw(const RejectionRows& r, int64_t t, int64_t weight, int64_t seed, int64_t position) {
  const WeightedRow row = {r, t, weight};
  int64_t total = 0;
  for (int64_t v = 0; v < r.vocab; ++v) total += row.at(v);
  return total == 0 ? -1 : draw_ascending(row, r.vocab, total, seed, position);
}

// The correction at row t: from the residual of weight `weight` (kMassOne
// after a REJECTION rejection, w_i after a BLOCK prefix), falling back to p
// when that residual is empty; weight kDrawTarget: the bonus after full
// acceptance (p). -1: no token (the row has no target mass).
FS_HD int64_t rejection_correction(const RejectionRows& r, int64_t t, int64_t weight, int64_t seed, int64_t position) {
  if (weight >= 0) {
    const int64_t token = rejection_draw(r, t, weight, seed, position);
    if (token >= 0) return token;
  }
  return rejection_draw(r, t, kDrawTarget, seed, position);
}

}  // namespace fastspec

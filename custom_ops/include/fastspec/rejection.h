// REJECTION verification arithmetic (docs/ops/verify_draft_tokens.md "REJECTION",
// **REJECTION**), shared by every backend. Probability rows may be f32, f16 or
// bf16 (widened exactly to f32); every decision is made on int64 masses.
//
//   accept draft d at row t  iff  mq > 0 and ((rand64(seed, pos, ACCEPT) * mq) >> 64) < mp
//   after a rejection         a draw from max(mp_v - mq_v, 0), ascending ids (RESAMPLE);
//                             an empty residual draws from p instead
//   bonus                     a draw from mp_v, ascending ids (RESAMPLE)
// A draw with total mass 0 has no token (-1): the caller emits end_tokens[0].
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

// The mass of one element in a draw: max(mp - mq, 0) from the residual, else mp.
FS_HD int64_t rejection_draw_mass(int64_t mp, int64_t mq, bool residual) {
  if (!residual) return mp;
  return mp > mq ? mp - mq : 0;
}

FS_HD int64_t rejection_residual_mass(const RejectionRows& r, int64_t t, int64_t v) {
  return rejection_draw_mass(rejection_mass(r.target_probs, r.dtype, r.vocab, t, v),
                             rejection_mass(r.draft_probs, r.dtype, r.vocab, t, v), true);
}

// The acceptance test from the draft's masses under p (mp) and q (mq).
FS_HD bool rejection_accepts_masses(int64_t mp, int64_t mq, int64_t seed, int64_t position) {
  if (mq <= 0) return false;
  const uint64_t a = draw_point(rand64(seed, position, kStreamAccept), mq);
  return a < static_cast<uint64_t>(mp);
}

// The acceptance test of draft d at row t (accept_all is the caller's).
FS_HD bool rejection_accepts(const RejectionRows& r, int64_t t, int64_t d, int64_t seed,
                             int64_t position) {
  if (d < 0 || d >= r.vocab) return false;
  return rejection_accepts_masses(rejection_mass(r.target_probs, r.dtype, r.vocab, t, d),
                                  rejection_mass(r.draft_probs, r.dtype, r.vocab, t, d), seed, position);
}

// A draw over ascending ids from the masses residual ? max(p - q, 0) : p of
// row t; -1 when their total is 0. Serial (CPU, and a CUDA thread per slot).
FS_HD int64_t rejection_draw(const RejectionRows& r, int64_t t, bool residual, int64_t seed,
                             int64_t position) {
  int64_t total = 0;
  for (int64_t v = 0; v < r.vocab; ++v) {
    total += residual ? rejection_residual_mass(r, t, v)
                      : rejection_mass(r.target_probs, r.dtype, r.vocab, t, v);
  }
  if (total == 0) return -1;
  const uint64_t point = draw_point(rand64(seed, position, kStreamResample), total);
  uint64_t cumulative = 0;
  for (int64_t v = 0; v < r.vocab; ++v) {
    cumulative += static_cast<uint64_t>(residual ? rejection_residual_mass(r, t, v)
                                                 : rejection_mass(r.target_probs, r.dtype, r.vocab, t, v));
    if (cumulative > point) return v;
  }
  return r.vocab - 1;  // unreachable: the cumulative total exceeds every point
}

// The correction after a rejection at row t (residual, else p), or the bonus
// after full acceptance (p). -1: no token (the row has no target mass).
FS_HD int64_t rejection_correction(const RejectionRows& r, int64_t t, bool rejected, int64_t seed,
                                   int64_t position) {
  if (rejected) {
    const int64_t token = rejection_draw(r, t, true, seed, position);
    if (token >= 0) return token;
  }
  return rejection_draw(r, t, false, seed, position);
}

}  // namespace fastspec

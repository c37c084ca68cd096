// BLOCK verification (docs/ops/verify_draft_tokens.md "BLOCK"; Sun et al.,
// "Block Verification Accelerates Speculative Decoding"), shared by every
// backend. The drafts of a slot are judged as one block: a weight per prefix,
//   w_0 = 1,  w_i = min(w_{i-1} * p(d_i) / q(d_i), 1)  (0 once a draft is < 0, >= V or has q = 0),
// and the longest prefix i whose coin rand64(seed, step, BLOCK, i) lands under
// its chance is accepted:
//   i = n      (the whole block)  draw_point(coin, mq(d_n)) < w_{n-1} * mp(d_n)
//   0 < i < n                     draw_point(coin, loss_i) < gain_i over the row judging draft i + 1:
//                                 gain_i = sum_v max(w_i mp_v - mq_v, 0), loss_i = sum_v max(mq_v - w_i mp_v, 0)
//   none                          i = 0
// The coins are keyed by the step (its step_idx) and the prefix, not by the
// drafts' positions: BLOCK consults coins of prefixes it then rejects, and a
// later step covering those positions must not see them again (REJECTION's
// per-position coins would be reused, biased towards failing: lossy and slower).
// The correction after i < n drafts is drawn from max(w_i mp - mq, 0)
// (rejection_correction with weight w_i; w_0 = 1 is REJECTION's residual).
// Weights are masses (2^40 = 1): mass_mul and mass_ratio keep them exact
// integers, so every backend makes the same decisions.
#pragma once

#include <cstdint>

#include "fastspec/common.h"
#include "fastspec/mass.h"
#include "fastspec/philox.h"
#include "fastspec/rejection.h"

namespace fastspec {

// min(floor(a * 2^40 / m), 2^40) for a >= 0, m > 0: 40 steps of long division
// (no 128-bit or 64-bit hardware divide: the XPU has neither).
FS_HD int64_t mass_ratio(int64_t a, int64_t m) {
  if (a >= m) return kMassOne;
  const uint64_t divisor = static_cast<uint64_t>(m);
  uint64_t remainder = static_cast<uint64_t>(a), quotient = 0;  // remainder < m <= 2^40: no overflow
  for (int bit = 0; bit < 40; ++bit) {
    remainder <<= 1;
    quotient <<= 1;
    if (remainder >= divisor) {
      remainder -= divisor;
      quotient |= 1;
    }
  }
  return static_cast<int64_t>(quotient);
}

// mass_ratio through hardware 64-bit division (CPU, CUDA; not the XPU): the
// 40 quotient bits in as few chunks as keep the shifted remainder (< m) below
// 2^64, so the same exact quotient in about two divisions.
FS_HD int64_t mass_ratio_divide(int64_t a, int64_t m) {
  if (a >= m) return kMassOne;
  const uint64_t divisor = static_cast<uint64_t>(m);
  int width = 1;  // bit length of m (m < 2^63)
  for (int s = 32; s > 0; s >>= 1) {
    if ((divisor >> (width - 1)) >> s) width += s;
  }
  const int step = 64 - width;  // remainder < 2^width: remainder << step < 2^64
  uint64_t remainder = static_cast<uint64_t>(a), quotient = 0;
  for (int left = 40; left > 0;) {
    const int s = left < step ? left : step;
    remainder <<= s;
    quotient = (quotient << s) | (remainder / divisor);
    remainder %= divisor;
    left -= s;
  }
  return static_cast<int64_t>(quotient);
}

// w_i from w_{i-1} and the masses of draft i under p and q.
FS_HD int64_t block_next_weight(int64_t weight, int64_t mp, int64_t mq) {
  if (weight <= 0 || mq <= 0) return 0;
  return mass_ratio(mass_mul(weight, mp), mq);
}

// gain += max(w mp - mq, 0), loss += max(mq - w mp, 0) for one element.
FS_HD void block_add(int64_t weight, int64_t mp, int64_t mq, uint64_t* gain, uint64_t* loss) {
  const int64_t scaled = mass_mul(weight, mp);
  if (scaled > mq) {
    *gain += static_cast<uint64_t>(scaled - mq);
  } else {
    *loss += static_cast<uint64_t>(mq - scaled);
  }
}

// gain and loss of row t at weight w, read straight from memory (CPU, CUDA).
FS_HD void block_row_sums(const RejectionRows& r, int64_t t, int64_t weight, uint64_t* gain, uint64_t* loss) {
  *gain = 0;
  *loss = 0;
  for (int64_t v = 0; v < r.vocab; ++v) {
    block_add(weight, rejection_mass(r.target_probs, r.dtype, r.vocab, t, v),
              rejection_mass(r.draft_probs, r.dtype, r.vocab, t, v), gain, loss);
  }
}

// w_j of the first j drafts (drafts[1 .. j], judged by rows first .. first + j - 1).
// Rows: draft_masses(a, t, d, &mp, &mq) (false for a draft outside the vocabulary).
template <class Params, class Rows>
FS_HD int64_t block_weight(const Params& a, const Rows& rows, const int64_t* drafts, int64_t first, int64_t j) {
  int64_t weight = kMassOne;
  for (int64_t k = 0; k < j && weight > 0; ++k) {
    int64_t mp = 0, mq = 0;
    if (!rows.draft_masses(a, first + k, drafts[k + 1], &mp, &mq)) return 0;
    weight = block_next_weight(weight, mp, mq);
  }
  return weight;
}

// How many of the n drafts (drafts[1 .. n]) BLOCK accepts, and in *weight the
// correction's residual weight (kDrawTarget after all n: the bonus from p).
// Tried from the whole block down, so a slot that accepts everything reads no
// whole row; each weight is recomputed from its prefix (n <= K is small).
// Rows: draft_masses as above, block_sums(a, t, w, &gain, &loss).
template <class Params, class Rows>
FS_HD int64_t block_accepted(const Params& a, const Rows& rows, const int64_t* drafts, int64_t first, int64_t n,
                             int64_t seed, int64_t step, int64_t* weight) {
  for (int64_t i = n; i >= 1; --i) {
    const int64_t previous = block_weight(a, rows, drafts, first, i - 1);
    int64_t mp = 0, mq = 0;
    if (previous == 0 || !rows.draft_masses(a, first + i - 1, drafts[i], &mp, &mq)) continue;
    const uint64_t coin = rand64(seed, step, kStreamBlock, static_cast<uint32_t>(i));
    if (i == n) {
      if (mq > 0 && draw_point(coin, mq) < static_cast<uint64_t>(mass_mul(previous, mp))) {
        *weight = kDrawTarget;
        return n;
      }
      continue;
    }
    const int64_t w = block_next_weight(previous, mp, mq);
    if (w == 0) continue;  // gain 0: never accepted
    uint64_t gain = 0, loss = 0;
    rows.block_sums(a, first + i, w, &gain, &loss);
    if (scale_rand64(coin, loss) < gain) {
      *weight = w;
      return i;
    }
  }
  *weight = kMassOne;
  return 0;
}

}  // namespace fastspec

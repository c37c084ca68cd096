// REJECTION at one node of a draft tree: SpecInfer's multi-draft rejection in
// exact integer masses (docs/ops/draft_tree.md "REJECTION at a node";
// fastspec/reference/multidraft.py), shared by every backend.
//
// The node's children are tried in index order against a target t_k:
//   t_0 = mp;  try k accepts d  iff  mq(d) > 0 and draw_point(rand64(seed, pos, ACCEPT, k), mq(d)) < t_k(d)
//   rejected:  r_{k+1} = max(t_k - mq, 0), R_{k+1} = sum r_{k+1}, t_{k+1} = mass_ratio(r_{k+1}, R_{k+1})
// After every child is rejected the correction is drawn from r_k (RESAMPLE),
// or from p when R_k = 0 (no child is tried after that). No backend keeps a
// row of V residuals: an element's r_k is recomputed from mp, mq and the
// totals R_1 .. R_{k-1} (k small), so a pass over the row gives R_k or a draw.
#pragma once

#include <cstdint>

#include "fastspec/block_verify.h"
#include "fastspec/common.h"
#include "fastspec/philox.h"

namespace fastspec {

constexpr int32_t kMaxNodeTries = 127;  // a node has at most N - 1 children (draft_tree.h)

// The tries made at one node: totals[k - 1] = R_k after k rejected tries.
struct TreeTries {
  int64_t totals[kMaxNodeTries];
  int32_t count;  // tries rejected so far
  bool empty;     // the last residual is empty: no more tries
};

// The renormalisation: mass_ratio, through hardware division where a backend
// has it (kDivide; the XPU has not), the same exact quotient either way.
// (A specialisation, so the XPU never compiles a call to a 64-bit division.)
template <bool kDivide>
FS_HD int64_t tries_ratio(int64_t r, int64_t total) {
  return mass_ratio(r, total);
}
template <>
FS_HD int64_t tries_ratio<true>(int64_t r, int64_t total) {
  return mass_ratio_divide(r, total);
}

// r_k(v) from the element's masses (k = 0: mp itself).
template <bool kDivide>
FS_HD int64_t tries_residual(int64_t mp, int64_t mq, const TreeTries& tries, int32_t k) {
  int64_t target = mp;
  for (int32_t j = 1; j <= k; ++j) {
    const int64_t r = target > mq ? target - mq : 0;
    if (r == 0 || j == k) return r;
    target = tries_ratio<kDivide>(r, tries.totals[j - 1]);
  }
  return target;
}

// t_k(v): the target try k compares against.
template <bool kDivide>
FS_HD int64_t tries_target(int64_t mp, int64_t mq, const TreeTries& tries, int32_t k) {
  if (k == 0) return mp;
  const int64_t r = tries_residual<kDivide>(mp, mq, tries, k);
  return r == 0 ? 0 : tries_ratio<kDivide>(r, tries.totals[k - 1]);
}

// Try tries->count with draft d (-1 when outside the vocabulary) of masses mp,
// mq: true when accepted; otherwise the residual's total is recorded.
// Rows: kDivide (tries_ratio), residual_total(t, tries, k) (the sum over the row of r_k).
template <class Rows>
FS_HD bool tries_accept(const Rows& rows, int64_t t, int64_t d, int64_t mp, int64_t mq, int64_t seed, int64_t position,
                        TreeTries* tries) {
  if (tries->empty) return false;
  const int32_t k = tries->count;
  if (d >= 0 && mq > 0) {
    const uint64_t coin = rand64(seed, position, kStreamAccept, static_cast<uint32_t>(k));
    if (draw_point(coin, mq) < static_cast<uint64_t>(tries_target<Rows::kDivide>(mp, mq, *tries, k))) return true;
  }
  tries->count = k + 1;
  tries->totals[k] = rows.residual_total(t, *tries, k + 1);
  tries->empty = tries->totals[k] == 0;
  return false;
}

// The residual the correction is drawn from: r_k after k rejected tries, or
// r_0 = p at a leaf and after an empty residual.
FS_HD int32_t tries_drawn_residual(const TreeTries& tries) { return tries.empty ? 0 : tries.count; }

// Rows straight from memory (CPU, CUDA): one pass over row t per total or draw.
struct TriesInMemory {
  static constexpr bool kDivide = true;
  RejectionRows r;

  // r_k over row t (the masses draw_ascending reads).
  struct Residual {
    const TriesInMemory& rows;
    int64_t t;
    const TreeTries& tries;
    int32_t k;
    FS_HD int64_t at(int64_t v) const {
      const RejectionRows& r = rows.r;
      return tries_residual<kDivide>(rejection_mass(r.target_probs, r.dtype, r.vocab, t, v),
                                     rejection_mass(r.draft_probs, r.dtype, r.vocab, t, v), tries, k);
    }
  };

  FS_HD int64_t residual_total(int64_t t, const TreeTries& tries, int32_t k) const {
    const Residual residual = {*this, t, tries, k};
    int64_t total = 0;
    for (int64_t v = 0; v < r.vocab; ++v) total += residual.at(v);
    return total;
  }
  // The correction after the tries (-1: the row has no target mass).
  FS_HD int64_t correction(int64_t t, const TreeTries& tries, int64_t seed, int64_t position) const {
    const int32_t k = tries_drawn_residual(tries);
    const int64_t total = k == 0 ? residual_total(t, tries, 0) : tries.totals[k - 1];
    return total == 0 ? -1 : draw_ascending(Residual{*this, t, tries, k}, r.vocab, total, seed, position);
  }
};

}  // namespace fastspec

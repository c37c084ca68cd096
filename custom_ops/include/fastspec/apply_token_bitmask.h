// apply_token_bitmask: parameters, the per-entry rule every backend shares, and
// the launcher declarations. Semantics: docs/ops/apply_token_bitmask.md.
//
// The rule is a pure function of (index, word): a kept entry keeps its bits, a
// forbidden one gets the -inf bit pattern of its dtype, so every backend writes
// the same bits whatever its schedule.
#pragma once

#include <cstdint>

#include "fastspec/common.h"
#include "fastspec/sampling.h"  // ProbDtype

namespace fastspec {

struct ApplyTokenBitmaskParams {
  void* logits;                 // [T, V] float32 / float16 / bfloat16, in place
  int32_t logits_dtype;         // ProbDtype
  const int32_t* token_bitmask; // [M, W] int32
  const int32_t* bitmask_index; // [T] int32
  int64_t rows;                 // T
  int64_t vocab;                // V
  int64_t mask_rows;            // M
  int64_t mask_words;           // W
};

// -inf of each dtype, as bits (f32, and fp16 / bf16 as 16-bit words).
constexpr uint32_t kNegInfF32 = 0xff800000u;
constexpr uint16_t kNegInfF16 = 0xfc00u;
constexpr uint16_t kNegInfBF16 = 0xff80u;

// The bitmask row of logits row t, or -1 when the row is left untouched.
FS_HD int64_t bitmask_row(const int32_t* bitmask_index, int64_t t, int64_t mask_rows) {
  const int64_t m = bitmask_index[t];
  return m >= 0 && m < mask_rows ? m : -1;
}

// Token v is kept iff it lies inside the mask and its bit is set in `words` (the row's W words).
FS_HD bool token_allowed(const int32_t* words, int64_t mask_words, int64_t v) {
  const int64_t w = v >> 5;
  return w < mask_words && ((static_cast<uint32_t>(words[w]) >> (v & 31)) & 1u) != 0;
}

// Host-side size rule the launchers share.
FS_HD bool bitmask_sizes_ok(const ApplyTokenBitmaskParams& p) {
  return p.rows >= 0 && p.vocab >= 1 && p.mask_rows >= 1 && p.mask_words >= 1 &&
         (p.logits_dtype == kProbF32 || p.logits_dtype == kProbF16 || p.logits_dtype == kProbBF16);
}

// CPU: rows across the pool from 2^20 entries (a row by one thread). Returns kOk.
// XPU: one launch over the grid; each core takes (row, 1024-token chunk) tiles in turn.
// CUDA: one launch, a block per (row, span of the vocabulary), a thread per entry.
// No allocation, no host synchronisation: safe inside CUDA Graph capture.
FASTSPEC_LAUNCHERS(apply_token_bitmask, ApplyTokenBitmaskParams);

}  // namespace fastspec

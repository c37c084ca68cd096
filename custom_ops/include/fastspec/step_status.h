// step_status: parameters, the per-value rule every backend shares, and the
// launcher declarations. Semantics: docs/ops/step_status.md; the numpy twin is
// fastspec/reference/step_status.py.
//
// What the host reads of a step, gathered into one int64 tensor after the update
// so that one read tells the host everything: the step's record (pack_rows), the
// kept tokens and each slot's flags and lengths. Integers only: every backend
// writes the same.
#pragma once

#include <cstdint>

#include "fastspec/common.h"

namespace fastspec {

struct StepStatusParams {
  const int64_t* step_record;       // [B, K + 2]: rows, decode, drafts
  const int32_t* accept_num;        // [B]
  const int64_t* accept_tokens;     // [B, K + 1]
  const bool* stop_flags;           // [B]
  const bool* is_block_step;        // [B]
  const int32_t* seq_lens_encoder;  // [B]
  const int32_t* seq_lens_decoder;  // [B]
  int64_t* status;                  // [B, 2, K + 4], new: 2K + 8 values a slot
  int64_t batch;                    // B
  int64_t draft_cols;               // K + 1
};

// Values a slot's status holds: K + 2 of the record, 1 + (K + 1) kept, 4 flags.
FS_HD int64_t status_cols(int64_t draft_cols) { return 2 * draft_cols + 6; }

// Value j of slot b's status (j < status_cols).
FS_HD int64_t status_value(const StepStatusParams& p, int64_t b, int64_t j) {
  const int64_t record = p.draft_cols + 1, kept = record + 1 + p.draft_cols;
  if (j < record) return p.step_record[b * record + j];
  if (j == record) return p.accept_num[b];
  if (j < kept) return p.accept_tokens[b * p.draft_cols + (j - record - 1)];
  switch (j - kept) {
    case 0:
      return p.stop_flags[b] ? 1 : 0;
    case 1:
      return p.is_block_step[b] ? 1 : 0;
    case 2:
      return p.seq_lens_encoder[b];
    default:
      return p.seq_lens_decoder[b];
  }
}

FS_HD bool step_status_sizes_ok(const StepStatusParams& p) { return p.batch >= 1 && p.draft_cols >= 1; }

// CPU: one thread (2K + 8 values a slot).
// XPU: the slots over every core of the grid, each slot's values in LM.
// CUDA: a thread per value. No allocation, no host synchronisation: safe inside
// CUDA Graph capture.
FASTSPEC_LAUNCHERS(step_status, StepStatusParams);

}  // namespace fastspec

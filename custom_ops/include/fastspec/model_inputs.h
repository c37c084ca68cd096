// model_inputs: parameters, the per-entry rules every backend shares, and the
// launcher declarations. Semantics: docs/ops/model_inputs.md; the numpy twin is
// fastspec/reference/model_inputs.py.
//
// What a chain step's model sees, built on the device after pack_rows: each slot's
// token grid (its committed tokens, then this step's drafts), its valid length,
// and each output row's position. Integers only: every backend writes the same.
#pragma once

#include <cstdint>

#include "fastspec/common.h"

namespace fastspec {

struct ModelInputsParams {
  const int64_t* token_ids_all;              // [B, L]
  const int64_t* prompt_lens;                // [B]
  const int64_t* step_idx;                   // [B]
  const int32_t* seq_lens_encoder;           // [B]
  const int64_t* draft_tokens;               // [B, K + 1]
  const int32_t* cu_seqlens_q_output;        // [B + 1]
  const int32_t* batch_id_per_token_output;  // [T]
  int64_t* tokens;                           // [B, L], new
  int64_t* lengths;                          // [B], new
  int64_t* row_pos;                          // [T], new
  int64_t batch;                             // B
  int64_t max_model_len;                     // L
  int64_t draft_cols;                        // K + 1
  int64_t rows;                              // T
};

// Slot b's rows this step and its first draft column (prompt + generated tokens).
FS_HD int64_t slot_rows(const ModelInputsParams& p, int64_t b) {
  return static_cast<int64_t>(p.cu_seqlens_q_output[b + 1]) - p.cu_seqlens_q_output[b];
}
FS_HD int64_t slot_start(const ModelInputsParams& p, int64_t b) { return add_sat64(p.prompt_lens[b], p.step_idx[b]); }

// Valid entries of slot b's grid: a prefill's start, a decode slot's start + rows - 1, 0 without rows.
FS_HD int64_t slot_length(const ModelInputsParams& p, int64_t b) {
  const int64_t rows = slot_rows(p, b), start = slot_start(p, b);
  if (rows <= 0) return 0;
  return p.seq_lens_encoder[b] > 0 ? start : add_sat64(start, rows - 1);
}

// Column c of slot b's grid: draft c - start (1-based in draft_tokens) inside a decode
// slot's window [start, start + rows - 1), `committed` (token_ids_all[b, c]) elsewhere.
// `drafts` is the slot's draft row.
FS_HD int64_t grid_token(const ModelInputsParams& p, int64_t b, int64_t c, int64_t start, int64_t rows,
                         const int64_t* drafts, int64_t committed) {
  const int64_t k = p.draft_cols - 1;
  const int64_t offset = sub_sat64(c, start);
  if (k > 0 && p.seq_lens_encoder[b] <= 0 && offset >= 0 && offset < rows - 1) {
    return drafts[1 + (offset < k - 1 ? offset : k - 1)];
  }
  return committed;
}

// Output row r of slot b (its first row cu_b, its first draft column start): start - 1
// plus the row's index among the slot's rows; 0 for a padding row (b outside [0, B)).
FS_HD int64_t row_position_rule(int32_t b, int64_t batch, int64_t r, int32_t cu_b, int64_t start) {
  if (b < 0 || b >= batch) return 0;
  return add_sat64(sub_sat64(start, 1), r - cu_b);
}

FS_HD int64_t row_position(const ModelInputsParams& p, int64_t r) {
  const int32_t b = p.batch_id_per_token_output[r];
  if (b < 0 || b >= p.batch) return 0;
  return row_position_rule(b, p.batch, r, p.cu_seqlens_q_output[b], slot_start(p, b));
}

FS_HD bool model_inputs_sizes_ok(const ModelInputsParams& p) {
  return p.batch >= 1 && p.max_model_len >= 1 && p.draft_cols >= 1 && p.rows >= 0;
}

// CPU: one thread (a copy of the grid and a few values a slot). Returns kOk.
// XPU: the slots' grid rows over every core of the grid (256-token tiles through
// LM), then the output rows' positions.
// CUDA: a block per (slot, span of 256 columns), then a thread per output row.
// No allocation, no host synchronisation: safe inside CUDA Graph capture.
FASTSPEC_LAUNCHERS(model_inputs, ModelInputsParams);

}  // namespace fastspec

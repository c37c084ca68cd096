// pack_rows: parameters, the per-slot rule every backend shares, and the launcher
// declarations. Semantics: docs/ops/pack_rows.md; the numpy twin is
// fastspec/reference/packing.py.
//
// A step's glue before the model, in one op: each slot's kind (prefill, decode,
// neither), a proposer's drafts written into the state, the output rows packed
// (cu_seqlens_q_output, batch_id_per_token_output) and the step's record. Every
// value is an integer: the backends agree whatever their schedule.
#pragma once

#include <cstdint>

#include "fastspec/common.h"

namespace fastspec {

struct PackRowsParams {
  const bool* stop_flags;              // [B]
  const bool* is_block_step;           // [B]
  const int32_t* seq_lens_encoder;     // [B]
  const int32_t* seq_lens_decoder;     // [B]
  int64_t* draft_tokens;               // [B, K + 1], in place (columns 1..K with a proposal)
  int32_t* seq_lens_this_time;         // [B], in place (with a proposal)
  int32_t* cu_seqlens_q_output;        // [B + 1], in place
  int32_t* batch_id_per_token_output;  // [T], in place
  const int64_t* proposal_tokens;      // [B, K] or null (read only with proposal_lens)
  const int32_t* proposal_lens;        // [B] or null: no proposal
  int64_t* step_record;                // [B, K + 2], new: rows, decode, drafts
  int64_t batch;                       // B
  int64_t draft_cols;                  // K + 1
  int64_t rows;                        // T
};

constexpr int32_t kInt32Max = 2147483647;

// Slot b's kind and its drafts: with a proposal, a decode slot takes its first
// clamp(len, 0, K) drafts (-1 after them) and feeds 1 + that many tokens, a prefill
// keeps seq_lens_this_time, any other slot gets no drafts and 0; then its record
// row (rows, decode, drafts). Returns its output rows: a decode slot's
// max(seq_lens_this_time, 0), a prefill's 1, else 0.
FS_HD int32_t pack_slot(const PackRowsParams& p, int64_t b) {
  const int64_t k = p.draft_cols - 1;
  const bool running = !p.stop_flags[b] && !p.is_block_step[b];
  const bool prefill = running && is_prefill(p.seq_lens_encoder[b]);
  const bool decode = running && is_decode(p.seq_lens_encoder[b], p.seq_lens_decoder[b]);
  int64_t* drafts = p.draft_tokens + b * p.draft_cols;
  if (p.proposal_lens != nullptr) {
    int64_t n = decode ? p.proposal_lens[b] : 0;
    n = n < 0 ? 0 : (n > k ? k : n);
    for (int64_t i = 0; i < k; ++i) drafts[1 + i] = i < n ? p.proposal_tokens[b * k + i] : -1;
    p.seq_lens_this_time[b] = decode ? static_cast<int32_t>(n + 1) : (prefill ? p.seq_lens_this_time[b] : 0);
  }
  const int32_t fed = p.seq_lens_this_time[b];
  const int32_t rows = decode ? (fed > 0 ? fed : 0) : (prefill ? 1 : 0);
  int64_t* record = p.step_record + b * (k + 2);
  record[0] = rows;
  record[1] = decode ? 1 : 0;
  for (int64_t i = 0; i < k; ++i) record[2 + i] = drafts[1 + i];
  return rows;
}

// The prefix sums, saturated at INT32_MAX: cu[b + 1] = cu[b] + rows[b].
FS_HD int32_t add_rows_sat(int32_t cu, int32_t rows) {
  return static_cast<int32_t>(min64(static_cast<int64_t>(cu) + rows, kInt32Max));
}

// The slot of output row r: the count of cu[1..B] entries <= r (cu is
// non-decreasing), -1 past the packed rows.
FS_HD int32_t row_slot(const int32_t* cu, int64_t batch, int64_t r) {
  int64_t lo = 0, hi = batch;  // the first b with cu[b + 1] > r
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (cu[mid + 1] <= r) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo < batch ? static_cast<int32_t>(lo) : -1;
}

FS_HD bool pack_rows_sizes_ok(const PackRowsParams& p) {
  // a proposal is its lengths; its tokens come with them unless there is no draft column (K = 0)
  return p.batch >= 1 && p.draft_cols >= 1 && p.rows >= 0 &&
         (p.proposal_lens == nullptr || p.proposal_tokens != nullptr || p.draft_cols == 1);
}

// CPU: one thread (a slot costs nanoseconds). Returns kOk.
// XPU: one core of the grid walks the slots and the rows (the others return).
// CUDA: one block: threads over the slots, one thread's prefix sums, threads over
// the rows. No allocation, no host synchronisation: safe inside CUDA Graph capture.
FASTSPEC_LAUNCHERS(pack_rows, PackRowsParams);

}  // namespace fastspec

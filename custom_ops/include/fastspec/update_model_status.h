// update_model_status: parameters, the per-slot rule shared by every backend,
// and the launcher declarations. Semantics: docs/ops/update_model_status.md.
//
// Each slot is updated independently; has_running is the OR over slots of
// "running after the update" (CPU: a reduction; CUDA: one block, __syncthreads_or).
#pragma once

#include <cstdint>

#include "fastspec/common.h"
#include "fastspec/verify_slot.h"  // is_end_token

namespace fastspec {

struct UpdateModelStatusParams {
  int32_t* seq_lens_encoder;    // [B], in place
  int32_t* seq_lens_decoder;    // [B], in place
  int32_t* seq_lens_this_time;  // [B], in place
  int64_t* step_idx;            // [B], in place
  bool* stop_flags;             // [B], in place
  int64_t* accept_tokens;       // [B, K + 1], in place
  int32_t* accept_num;          // [B], in place
  int64_t* draft_tokens;        // [B, K + 1], in place
  int64_t* token_ids_all;       // [B, L], in place
  const int64_t* prompt_lens;   // [B]
  const bool* is_block_step;    // [B]
  const int64_t* max_dec_len;   // [B]
  const int64_t* end_tokens;    // [E], E >= 1
  bool* has_running;            // [1], written (never read)
  int64_t batch;                // B
  int64_t draft_cols;           // K + 1 (accept_tokens and draft_tokens)
  int64_t max_model_len;        // L
  int64_t num_end_tokens;       // E
};

// int32 addition that wraps like numpy's instead of being undefined.
FS_HD int32_t wrap_add32(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}

FS_HD bool slot_running(int32_t enc, int32_t dec, bool stopped, bool blocked) {
  return (is_prefill(enc) || is_decode(enc, dec)) && !stopped && !blocked;
}

// The per-slot rule (docs/ops/update_model_status.md), all but the history: the kept tokens are left in
// accept_tokens[b, 0:accept_num[b]], and *history_at is where they go in
// token_ids_all[b, :] (update_slot writes them; the XPU kernel copies them
// out of local memory). Returns whether the slot is running afterwards.
FS_HD bool update_slot_rule(const UpdateModelStatusParams& a, int64_t b, int64_t* history_at) {
  int64_t* accepted = a.accept_tokens + b * a.draft_cols;
  const bool blocked = a.is_block_step[b];
  if (blocked) {  // wins over stopped
    a.seq_lens_this_time[b] = 0;
    a.accept_num[b] = 0;
    return false;
  }
  const int32_t enc = a.seq_lens_encoder[b];
  const int32_t dec = a.seq_lens_decoder[b];
  if (!slot_running(enc, dec, a.stop_flags[b], false)) {
    a.seq_lens_encoder[b] = 0;
    a.seq_lens_decoder[b] = 0;
    a.seq_lens_this_time[b] = 0;
    a.accept_num[b] = 0;
    for (int64_t k = 0; k < a.draft_cols; ++k) accepted[k] = -1;
    return false;
  }

  // Walk the accepted tokens; an out-of-range accept_num reads at most K + 1.
  const int64_t count = min64(max64(a.accept_num[b], 0), a.draft_cols);
  const int64_t p = a.prompt_lens[b];
  const int64_t max_dec = a.max_dec_len[b];
  int64_t step = a.step_idx[b];
  *history_at = static_cast<int64_t>(static_cast<uint64_t>(p) +
                                     static_cast<uint64_t>(step));  // used only when a token is kept (then in [0, L))
  int64_t kept = 0;
  bool ended = false;
  for (int64_t k = 0; k < count && !ended; ++k) {
    // Position p + step must lie in [0, L); otherwise the token is dropped.
    if (p < 0 || step < 0 || p >= a.max_model_len || step >= a.max_model_len - p) {
      ended = true;
      break;
    }
    int64_t token = accepted[k];
    step += 1;
    const bool is_end = is_end_token(token, a.end_tokens, a.num_end_tokens);
    if (step >= max_dec && !is_end) token = a.end_tokens[0];
    ended = is_end || step >= max_dec;
    accepted[kept++] = token;
  }
  for (int64_t k = kept; k < a.draft_cols; ++k) accepted[k] = -1;
  a.step_idx[b] = step;
  a.accept_num[b] = static_cast<int32_t>(kept);

  int32_t new_enc = enc, new_dec = dec;
  if (is_prefill(enc)) {
    new_dec = wrap_add32(dec, enc);
    if (kept > 0) new_enc = 0;
  } else {
    new_dec = wrap_add32(dec, static_cast<int32_t>(kept));
  }
  a.seq_lens_encoder[b] = new_enc;
  a.seq_lens_decoder[b] = new_dec;

  int64_t* drafts = a.draft_tokens + b * a.draft_cols;
  if (kept > 0) drafts[0] = accepted[kept - 1];
  for (int64_t k = 1; k < a.draft_cols; ++k) drafts[k] = -1;

  if (ended) a.stop_flags[b] = true;
  a.seq_lens_this_time[b] = ended ? 0 : 1;
  return slot_running(new_enc, new_dec, ended, false);
}

// The whole per-slot rule on arrays (CPU, CUDA).
FS_HD bool update_slot(const UpdateModelStatusParams& a, int64_t b) {
  int64_t history_at = 0;
  const bool running = update_slot_rule(a, b, &history_at);
  const int64_t* accepted = a.accept_tokens + b * a.draft_cols;
  for (int32_t k = 0; k < a.accept_num[b]; ++k) a.token_ids_all[b * a.max_model_len + history_at + k] = accepted[k];
  return running;
}

// CPU: threads across slots, then has_running. Returns kOk.
// XPU: one launch of one cluster (slots strided over its cores), which also
// writes has_running (custom_ops/xpu).
// CUDA: one launch of one block (slots strided over its threads), which also
// writes has_running. No allocation, no host synchronisation, no memset:
// safe inside CUDA Graph capture. Batches above kMaxCudaBatch get
// cudaErrorInvalidValue.
FASTSPEC_LAUNCHERS(update_model_status, UpdateModelStatusParams);

}  // namespace fastspec

// What the verifying ops (verify_draft_tokens, verify_draft_tree) share per
// slot: which target rows the slot reads this step and how a decided token is
// written (docs/ops/verify_draft_tokens.md "Rules", steps 1 and 3).
#pragma once

#include <cstdint>

#include "fastspec/common.h"

namespace fastspec {

FS_HD bool is_end_token(int64_t token, const int64_t* end_tokens, int64_t count) {
  for (int64_t e = 0; e < count; ++e) {
    if (token == end_tokens[e]) return true;
  }
  return false;
}

// A slot's target rows this step: first .. first + need - 1.
struct JudgedRows {
  int64_t first;
  int64_t need;
  bool prefill;
};

// False for a slot that emits nothing this step: stopped, blocked, idle, or
// its rows outside [0, a.rows). Params: either op's params struct.
template <class Params>
FS_HD bool judged_rows(const Params& a, int64_t b, JudgedRows* rows) {
  if (a.stop_flags[b] || a.is_block_step[b]) return false;
  const int32_t enc = a.seq_lens_encoder[b];
  const int32_t this_time = a.seq_lens_this_time[b];
  const bool prefill = is_prefill(enc);
  if (!prefill && !(enc == 0 && this_time >= 1)) return false;
  const int64_t need = prefill ? 1 : this_time;
  const int64_t first = a.cu_seqlens_q_output[b];
  const int64_t end = a.cu_seqlens_q_output[b + 1];
  if (first < 0 || end > a.rows || end - first < need) return false;
  *rows = {first, need, prefill};
  return true;
}

// Writes a slot's decided tokens into its accept_tokens row: end_tokens[0] in
// place of a token once max_dec_len is reached without an end token.
struct SlotEmitter {
  int64_t* out;
  int64_t cur;  // step_idx + tokens written so far, wrapping like the reference
  int64_t max_dec;
  const int64_t* end_tokens;
  int64_t num_end_tokens;
  int64_t count;

  // Returns whether the request has finished.
  FS_HD bool emit(int64_t token) {
    cur = static_cast<int64_t>(static_cast<uint64_t>(cur) + 1);
    const bool is_end = is_end_token(token, end_tokens, num_end_tokens);
    out[count++] = cur >= max_dec && !is_end ? end_tokens[0] : token;
    return is_end || cur >= max_dec;
  }
};

template <class Params>
FS_HD SlotEmitter slot_emitter(const Params& a, int64_t b, int64_t* out) {
  return SlotEmitter{out, a.step_idx[b], a.max_dec_len[b], a.end_tokens, a.num_end_tokens, 0};
}

}  // namespace fastspec

// update_model_status: parameters, the per-slot rule shared by every backend,
// and the launcher declarations. Semantics: docs/ops/update_model_status.md.
//
// Each slot is updated independently; has_running is the OR over slots of
// "running after the update" (CPU: a reduction; CUDA: one block, __syncthreads_or).
#pragma once

#include <cstdint>

#include "fastspec/common.h"
#include "fastspec/token_sequences.h"
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
  const int64_t* stop_token_ids;  // [B, S] or null (none): each request's stop token ids, -1 for none
  const int64_t* stop_sequences;  // [B, SS] or null (none): its stop sequences, split at the negative entries
  const int64_t* min_tokens;      // [B] or null (0): a stop sequence counts once this many tokens are out
  bool* has_running;              // [1], written (never read)
  int64_t batch;                  // B
  int64_t draft_cols;             // K + 1 (accept_tokens and draft_tokens)
  int64_t max_model_len;          // L
  int64_t num_end_tokens;         // E
  int64_t stop_cols;              // S (0 without stop_token_ids)
  int64_t stop_sequence_cols;     // SS (0 without stop_sequences)
};

// The output a stop sequence may reach back into: the slot's last `count` output tokens before
// this step, at `tokens` (in token_ids_all, or a copy of them in XPU local memory).
struct RecentOutput {
  const int64_t* tokens;
  int64_t count;
};

// How many output tokens before this step a stop sequence of slot b may need: up to the table's
// width (no sequence is longer), none without stop sequences or when the slot's positions are out
// of [0, L) (it keeps no token then). They end at token_ids_all[b, prompt_lens + step_idx - 1].
FS_HD int64_t stop_lookback(const UpdateModelStatusParams& a, int64_t b) {
  if (a.stop_sequences == nullptr) return 0;
  const int64_t p = a.prompt_lens[b], step = a.step_idx[b];
  if (p < 0 || step < 0 || p > a.max_model_len || step > a.max_model_len - p) return 0;
  return min64(step, a.stop_sequence_cols);
}

// The output before a new token, read from its end: this step's kept tokens kept[0, num_kept),
// after the recent output.
struct OutputBefore {
  const int64_t* kept;
  int64_t num_kept;
  RecentOutput recent;
  FS_HD int64_t length() const { return num_kept + recent.count; }
  FS_HD int64_t operator()(int64_t k) const {  // the k-th token from the end
    return k < num_kept ? kept[num_kept - 1 - k] : recent.tokens[recent.count - 1 - (k - num_kept)];
  }
};

struct TableRow {
  const int64_t* entries;
  FS_HD int64_t operator()(int64_t i) const { return entries[i]; }
};

// A slot's stops: its rows of the stop tables, each up to its last non-negative entry (the runtime
// pads them with -1, so a token meets the entries its request brought, not the tables' widths).
struct SlotStops {
  const int64_t* ids;
  int64_t num_ids;
  const int64_t* sequences;
  int64_t sequences_width;
  int64_t min_tokens;
};

FS_HD int64_t used_width(const int64_t* row, int64_t width) {
  while (width > 0 && row[width - 1] < 0) --width;
  return width;
}

FS_HD SlotStops slot_stops(const UpdateModelStatusParams& a, int64_t b) {
  SlotStops stops{nullptr, 0, nullptr, 0, 0};
  if (a.stop_token_ids != nullptr) {
    stops.ids = a.stop_token_ids + b * a.stop_cols;
    stops.num_ids = used_width(stops.ids, a.stop_cols);
  }
  if (a.stop_sequences != nullptr) {
    stops.sequences = a.stop_sequences + b * a.stop_sequence_cols;
    stops.sequences_width = used_width(stops.sequences, a.stop_sequence_cols);
  }
  if (a.min_tokens != nullptr) stops.min_tokens = a.min_tokens[b];
  return stops;
}

// Whether `token`, output token number `out`, is one of the slot's stop token ids or (once
// out >= min_tokens) the last token of one of its stop sequences whose rest ends `before`.
FS_HD bool hits_stop(const SlotStops& stops, int64_t token, int64_t out, const OutputBefore& before) {
  for (int64_t s = 0; s < stops.num_ids; ++s) {
    if (stops.ids[s] >= 0 && stops.ids[s] == token) return true;
  }
  if (out < stops.min_tokens) return false;
  const TableRow table{stops.sequences};
  for (int64_t e = 0; e < stops.sequences_width; ++e) {
    if (table(e) == token && sequence_rest_precedes(table, e, stops.sequences_width, before.length(), before)) {
      return true;
    }
  }
  return false;
}

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
// out of local memory). `recent`: the output before this step that stop sequences read
// (stop_lookback tokens). Returns whether the slot is running afterwards.
FS_HD bool update_slot_rule(const UpdateModelStatusParams& a, int64_t b, int64_t* history_at,
                            const RecentOutput& recent) {
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
  const SlotStops stops = slot_stops(a, b);
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
    // At max_dec_len a stop is still replaced, as verify_draft_tokens replaces any token but an end token there.
    const bool is_stop = !is_end && hits_stop(stops, token, step, OutputBefore{accepted, kept, recent});
    if (step >= max_dec && !is_end) token = a.end_tokens[0];
    ended = is_end || is_stop || step >= max_dec;
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
  RecentOutput recent{nullptr, stop_lookback(a, b)};
  if (recent.count > 0) {
    recent.tokens = a.token_ids_all + b * a.max_model_len + (a.prompt_lens[b] + a.step_idx[b] - recent.count);
  }
  int64_t history_at = 0;
  const bool running = update_slot_rule(a, b, &history_at, recent);
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

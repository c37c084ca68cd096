// process_logits: each request's penalties, logit bias and bans applied to its
// output rows, each row with its own history (docs/ops/process_logits.md;
// fastspec/reference/logits.py). Parameters, the rules every backend shares, and
// the launcher declarations.
//
// A token's new logit is one function of its logit, whether it is in the row's
// history and how often it is in the output (penalized_logit), so the backends
// may visit the history's tokens in any order and agree bit for bit; the bias
// entries are then added one at a time in column order, and the bans come last.
#pragma once

#include <cstdint>

#include "fastspec/common.h"
#include "fastspec/float_ops.h"

namespace fastspec {

struct ProcessLogitsParams {
  float* logits;                             // [T, V] float32, in place
  const int64_t* token_ids_all;              // [B, L]
  const int64_t* prompt_lens;                // [B]
  const int64_t* step_idx;                   // [B]
  const int64_t* draft_tokens;               // [B, K + 1]: column 0 committed, then drafts / tree nodes
  const int32_t* batch_id_per_token_output;  // [T]
  const int32_t* cu_seqlens_q_output;        // [B + 1]
  const float* repetition_penalty;           // [B]
  const float* presence_penalty;             // [B]
  const float* frequency_penalty;            // [B]
  const int64_t* min_tokens;                 // [B]
  const int64_t* end_tokens;                 // [E]
  const int64_t* stop_token_ids;             // [B, S], -1 for none
  const int64_t* logit_bias_ids;             // [B, NB], -1 for none
  const float* logit_bias_values;            // [B, NB]
  const int64_t* bad_words;                  // [B, BW]: sequences split at the negative entries
  const int32_t* draft_parents;              // [B, K + 1] or null (a chain)
  int64_t rows;                              // T
  int64_t vocab;                             // V
  int64_t batch;                             // B
  int64_t max_model_len;                     // L
  int64_t draft_cols;                        // K + 1
  int64_t num_end_tokens;                    // E
  int64_t stop_cols;                         // S
  int64_t bias_cols;                         // NB
  int64_t bad_words_cols;                    // BW
};

constexpr int kMaxLogitsPath = 128;  // K + 1 at most (the schema's limit on K): a node's path fits

// A slot's history in token_ids_all: the prompt [0, prompt_end), the output
// [prompt_end, output_end); out = output tokens committed (for min_tokens).
struct LogitsHistory {
  int64_t prompt_end = 0, output_end = 0, out = 0;
};

FS_HD LogitsHistory logits_history(int64_t prompt_len, int64_t step_idx, int64_t max_model_len) {
  LogitsHistory h;
  h.prompt_end = min64(max64(prompt_len, 0), max_model_len);
  h.out = max64(step_idx, 0);
  h.output_end = h.prompt_end + min64(h.out, max_model_len - h.prompt_end);
  return h;
}

// The node row t stands for: its offset in the slot's rows, clamped to [0, K].
FS_HD int64_t logits_row_node(int64_t t, int64_t row_begin, int64_t draft_cols) {
  return min64(max64(sub_sat64(t, row_begin), 0), draft_cols - 1);
}

// Output tokens before a row of node `node` (saturating): the committed ones and the node's drafts.
FS_HD int64_t logits_tokens_out(int64_t out, int64_t path_len) {
  return out > INT64_MAX - path_len ? INT64_MAX : out + path_len;
}

// The path from the root to `node`, root excluded, root first, into path[]; returns its length.
// A chain (parents null): 1 .. node. A tree: node's ancestors, a parent that is not before its
// child (or negative) ending the walk as the root would.
FS_HD int64_t logits_path(const int32_t* parents, int64_t node, int32_t* path) {
  if (parents == nullptr) {
    for (int64_t i = 0; i < node; ++i) path[i] = static_cast<int32_t>(i + 1);
    return node;
  }
  int64_t len = 0;
  for (int64_t i = node; i > 0;) {
    path[len++] = static_cast<int32_t>(i);
    const int64_t parent = parents[i];
    if (parent < 0 || parent >= i) break;
    i = parent;
  }
  for (int64_t a = 0, z = len - 1; a < z; ++a, --z) {
    const int32_t swap = path[a];
    path[a] = path[z];
    path[z] = swap;
  }
  return len;
}

// Whether a request's penalties change anything: each part is skipped at its neutral value.
FS_HD bool repetition_on(float repetition) { return repetition != 1.0f; }
FS_HD bool counts_on(float presence, float frequency) { return presence != 0.0f || frequency != 0.0f; }
FS_HD bool penalties_on(float repetition, float presence, float frequency) {
  return repetition_on(repetition) || counts_on(presence, frequency);
}

// A token's logit after the penalties: `x` its logit, in the row's history, `count` its
// occurrences in the output and the row's drafts.
// penalized_logit with its count as float32 and whether it is positive. Written with selects,
// not branches: the signs and counts of a history's logits are a coin toss for a branch
// predictor, and the CPU's loop over them is vectorised.
FS_HD float penalize_f32(float x, float count, bool in_output, float repetition, float presence, float frequency) {
  const float divided = div_f32(x, repetition), multiplied = mul_f32(x, repetition);
  const float repeated = repetition_on(repetition) ? (x > 0.0f ? divided : multiplied) : x;
  const float counted = sub_f32(sub_f32(repeated, mul_f32(frequency, count)), presence);
  return in_output && counts_on(presence, frequency) ? counted : repeated;
}

FS_HD float penalized_logit(float x, int64_t count, float repetition, float presence, float frequency) {
  return penalize_f32(x, int_to_f32(count), count > 0, repetition, presence, frequency);
}

FS_HD bool in_vocab(int64_t token, int64_t vocab) { return token >= 0 && token < vocab; }

// Whether the bad word ending at entry e of a request's table bans its token there: a sequence
// ends where a non-negative entry is followed by a negative one or the table's end, and begins
// after the negative entry before it. `entry(i)` reads entry i; `from_end(k)` is the output's
// k-th token from its end, `available` its length. The banned token is entry(e).
template <typename Entry, typename FromEnd>
FS_HD bool bad_word_bans(const Entry& entry, int64_t e, int64_t width, int64_t available, const FromEnd& from_end) {
  if (entry(e) < 0 || (e + 1 < width && entry(e + 1) >= 0)) return false;
  for (int64_t k = 0; k < e; ++k) {
    const int64_t token = entry(e - 1 - k);
    if (token < 0) return true;  // the start of the sequence
    if (k >= available || token != from_end(k)) return false;
  }
  return true;
}

FS_HD float negative_infinity_f32() { return -__builtin_huge_valf(); }

// CPU: slots across the pool; each builds its history's counts once and applies them to its rows.
// XPU: rows across the grid's cores (custom_ops/xpu).
// CUDA: one block per row; no allocation, no host synchronisation.
FASTSPEC_LAUNCHERS(process_logits, ProcessLogitsParams);

}  // namespace fastspec

// adaptive_plan and adaptive_observe: the draft-length controller's two steps
// (docs/ops/adaptive.md; fastspec/reference/adaptive.py). Parameters, the rules
// every backend shares, and the launcher declarations.
//
// Bit-identical floating point: every float32 product and sum is its own
// rounded operation (fastspec/float_ops.h), and every sum runs in one fixed
// order: a slot's cumprod by column, the plan's cumulative rows and tokens by
// rank, on one thread.
#pragma once

#include <cstdint>

#include "fastspec/common.h"
#include "fastspec/float_ops.h"

namespace fastspec {

struct AdaptivePlanParams {
  const float* acceptance;          // [B, K + 1]: column 0 the decoding flag, i the estimate of draft i
  const float* found;               // [B]: P(the proposer finds planned drafts)
  const float* step_cost;           // [R]: seconds of a forward of 1 .. R rows
  const float* rates;               // [5]: controller_rates (kPrior is read here)
  const int32_t* seq_lens_encoder;  // [B]
  const bool* stop_flags;           // [B]
  const bool* is_block_step;        // [B]
  int64_t* probe_step;              // [1], in place: advanced by one
  int32_t* draft_token_num;         // [B], written
  float* worth;                     // [B, K + 1], written: each candidate's expected tokens
  int32_t* ranking;                 // [B, K + 1], written: flat candidate index by rank
  int64_t batch;                    // B
  int64_t draft_cols;               // K + 1
  int64_t cost_len;                 // R
  int32_t probe_interval;           // 0: no probes
};

struct AdaptiveObserveParams {
  float* acceptance;                   // [B, K + 1], in place
  float* found;                        // [B], in place
  const int32_t* draft_token_num;      // [B]
  const int32_t* cu_seqlens_q_output;  // [B + 1]
  const int32_t* accept_num;           // [B]
  const float* rates;                  // [5]
  int64_t batch;                       // B
  int64_t draft_cols;                  // K + 1
};

// rates[]: the controller's settings, rounded to float32 once on the host.
enum AdaptiveRate : int { kLearningRate = 0, kKeepTried = 1, kKeepUntried = 2, kRelaxShift = 3, kPrior = 4 };
constexpr float kTieBreak = 1.0f / 4194304.0f;  // 2^-22 per slot: equal estimates must not tie

// Round half to even (as rintf in the default rounding mode), without libm.
FS_HD float round_even_f32(float x) {
  const float big = 8388608.0f;  // 2^23: from here on every float32 is an integer
  if (!(x < big && x > -big)) return x;  // NaN, infinities and integers stay
  return x >= 0.0f ? sub_f32(add_f32(x, big), big) : -sub_f32(add_f32(-x, big), big);
}

// -- adaptive_plan -----------------------------------------------------------------------

// The probe step this plan uses (the counter advanced by one, wrapping like int64).
FS_HD int64_t next_probe_step(int64_t step) { return static_cast<int64_t>(static_cast<uint64_t>(step) + 1u); }

// Whether slot b probes at `step`: b = step (mod interval).
FS_HD bool slot_probes(int64_t b, int64_t step, int32_t interval) {
  if (interval <= 0) return false;
  int64_t phase = step % interval;
  if (phase < 0) phase += interval;
  return b % interval == phase;
}

// Row b of worth: the cumprod of the slot's estimates (draft 1 at no less than the
// prior when it probes), minus 2^-22 b. Reads acceptance[0 .. cols), writes worth[0 .. cols).
FS_HD void slot_worth(const float* acceptance, float* worth, int64_t cols, int64_t b, bool probes, float prior,
                      bool probing_on) {
  const float tie = mul_f32(static_cast<float>(b), -kTieBreak);
  float product = 1.0f;
  for (int64_t j = 0; j < cols; ++j) {
    float estimate = acceptance[j];
    if (probing_on) {  // estimates = max(acceptance, probe), probe = prior at (probing slot, column 1), else 0
      const float probe = (probes && j == 1) ? prior : 0.0f;
      estimate = estimate > probe ? estimate : probe;
    }
    product = j == 0 ? estimate : mul_f32(product, estimate);
    worth[j] = add_f32(product, tie);
  }
}

// The ranking's order: worth descending (NaN last, as -infinity), ties by flat index ascending.
FS_HD bool ranks_before(float worth_a, int64_t index_a, float worth_b, int64_t index_b) {
  const float inf = 1.0f / 0.0f;
  const float a = is_nan_f32(worth_a) ? -inf : worth_a;
  const float b = is_nan_f32(worth_b) ? -inf : worth_b;
  return a > b || (a == b && index_a < index_b);
}

// ranks_before as one unsigned key (smaller ranks first; ties are left to the index): worth
// descending, -0 as +0, NaN as -infinity.
FS_HD uint32_t ranking_key(float worth) {
  const float inf = 1.0f / 0.0f;
  float w = is_nan_f32(worth) ? -inf : worth;
  if (w == 0.0f) w = 0.0f;  // -0 ranks as +0
  uint32_t bits;
  __builtin_memcpy(&bits, &w, sizeof bits);
  const uint32_t ascending = (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
  return ~ascending;
}

// Rows one candidate adds to the step: 1 for a slot's own token (column 0), found for a draft.
FS_HD float candidate_rows(int64_t index, int64_t cols, float found) { return index % cols == 0 ? 1.0f : found; }

// The scan over the ranking, one candidate at a time in rank order (one thread).
struct PlanScan {
  float prefill = 0.0f;     // prefilling slots: one row and one token each
  float cum_rows = 0.0f;    // rows of the candidates so far
  float cum_tokens = 0.0f;  // expected tokens of the candidates so far
  float best_rate = 0.0f;
  int64_t best = -1;        // the rank of the best rate so far (-1: none yet)

  // Adds the next candidate; returns the step_cost index of the step it closes.
  FS_HD int64_t add(float worth, float rows, int64_t cost_len) {
    cum_rows = add_f32(cum_rows, rows);
    cum_tokens = add_f32(cum_tokens, mul_f32(worth, rows));
    const float step_rows = round_even_f32(add_f32(cum_rows, prefill));
    if (!(step_rows >= 1.0f)) return 0;  // NaN too
    if (step_rows >= static_cast<float>(cost_len)) return cost_len - 1;
    return static_cast<int64_t>(step_rows) - 1;
  }
  // The rate of the step closed at `rank`, given that step's seconds; keeps the first largest (NaN never wins).
  FS_HD void rate(float seconds, int64_t rank) { keep_best(step_rate(seconds), rank); }
  FS_HD float step_rate(float seconds) const { return add_f32(cum_tokens, prefill) / seconds; }
  // rate's comparison alone: the CPU divides in one pass and compares in another, so that no
  // division waits on the previous rank's comparison.
  FS_HD void keep_best(float r, int64_t rank) {
    if (is_nan_f32(r)) {
      if (best < 0) best = rank, best_rate = -1.0f / 0.0f;
      return;
    }
    if (best < 0 || r > best_rate) best = rank, best_rate = r;
  }
};

// Slot b's drafts: the count of its worth[1 .. K] at or above the threshold.
FS_HD int32_t slot_drafts(const float* worth_row, int64_t cols, float threshold) {
  int32_t count = 0;
  for (int64_t j = 1; j < cols; ++j) count += worth_row[j] >= threshold ? 1 : 0;
  return count;
}

FS_HD bool slot_prefills(int32_t enc, bool stopped, bool blocked) { return !stopped && !blocked && is_prefill(enc); }

// -- adaptive_observe --------------------------------------------------------------------

// Slot b's update row, as in fastspec/reference/adaptive.py update_table: (rows, kept) from
// clip(rows (K + 2) + accept_num, 0, (K + 2)^2 - 1); no_drafts: planned drafts and found none.
struct ObserveRow {
  int64_t rows = 0, kept = 0;
  bool no_drafts = false;
};

FS_HD ObserveRow observe_row(int64_t rows, int64_t accept_num, bool no_drafts, int64_t k) {
  ObserveRow row;
  row.no_drafts = no_drafts;
  const int64_t width = k + 2;
  if (rows >= 0 && rows < width && accept_num >= 0 && accept_num < width) {  // the clip keeps it: no division
    row.rows = rows;
    row.kept = accept_num;
    return row;
  }
  const int64_t index = min64(max64(rows * width + accept_num, 0), width * width - 1);
  row.rows = index / width;
  row.kept = index % width;
  return row;
}

// Column j of a slot's update: estimate * scale + shift (two rounded operations).
FS_HD float observe_column(const ObserveRow& row, int64_t j, float estimate, const float* rates) {
  float scale = 1.0f, shift = 0.0f;
  if (row.no_drafts) {
    if (j == 0) scale = 0.0f, shift = 1.0f;
  } else if (j == 0) {
    if (row.rows > 0) scale = 0.0f, shift = 1.0f;  // it ran this step: it decodes next step
  } else {
    const int64_t offered = max64(row.rows - 1, 0);
    const int64_t accepted = min64(max64(row.kept - 1, 0), offered);
    if (j <= offered && j <= accepted + 1) {  // tried: accepted or the first rejected
      scale = rates[kKeepTried];
      shift = j <= accepted ? rates[kLearningRate] : 0.0f;
    } else if (j > offered) {  // not offered: relaxes toward the prior
      scale = rates[kKeepUntried];
      shift = rates[kRelaxShift];
    }
  }
  return add_f32(mul_f32(estimate, scale), shift);
}

// found after the step: a slot that decoded with drafts planned learns whether it got any.
FS_HD float observe_found(float found, bool tried, bool hit, float learning_rate) {
  if (!tried) return found;
  return add_f32(found, mul_f32(learning_rate, sub_f32(hit ? 1.0f : 0.0f, found)));
}

// One slot's whole update on arrays (CPU, CUDA; the XPU runs these rules on LM copies).
FS_HD void observe_slot(const AdaptiveObserveParams& p, int64_t b) {
  const int64_t cols = p.draft_cols;
  float* estimates = p.acceptance + b * cols;
  const int64_t rows = static_cast<int64_t>(p.cu_seqlens_q_output[b + 1]) - p.cu_seqlens_q_output[b];
  const bool tried = estimates[0] > 0.0f && p.draft_token_num[b] > 0;
  const bool hit = rows > 1;
  p.found[b] = observe_found(p.found[b], tried, hit, p.rates[kLearningRate]);
  const ObserveRow row = observe_row(rows, p.accept_num[b], tried && !hit, cols - 1);
  for (int64_t j = 0; j < cols; ++j) estimates[j] = observe_column(row, j, estimates[j], p.rates);
}

// CPU: sorts with the ranking's order, scans, counts. Returns kOk.
// XPU: one cluster; the ranking by counting, the scan on core 0 (custom_ops/xpu).
// CUDA: one block (the plan: worth, the ranking by counting, the scan on thread 0, the counts);
// no allocation, no host synchronisation. Batches above kMaxCudaBatch get cudaErrorInvalidValue.
FASTSPEC_LAUNCHERS(adaptive_plan, AdaptivePlanParams);
FASTSPEC_LAUNCHERS(adaptive_observe, AdaptiveObserveParams);

}  // namespace fastspec

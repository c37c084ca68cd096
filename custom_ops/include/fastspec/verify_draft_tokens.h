// verify_draft_tokens: parameters, the per-slot rule shared by every backend,
// and the launcher declarations. Semantics: docs/ops/verify_draft_tokens.md.
//
// Every slot is independent (no cross-slot pass), so both backends run
// verify_slot once per slot: CPU threads across slots, one CUDA thread per slot.
#pragma once

#include <cstdint>

#include "fastspec/block_verify.h"
#include "fastspec/common.h"
#include "fastspec/mass.h"
#include "fastspec/philox.h"
#include "fastspec/rejection.h"
#include "fastspec/verify_slot.h"

namespace fastspec {

// How a draft is judged and how the correction / bonus token is chosen.
enum VerifyStrategy : int32_t {
  kVerifyTopp = 0,         // draft accepted iff among the row's top-p candidates; correction drawn
  kVerifyGreedy = 1,       // draft accepted iff equal to the target token; correction = target
  kVerifyTargetMatch = 2,  // as GREEDY, with targets from sample_tokens (lossless for one-hot drafts)
  kVerifyRejection = 3,    // drafts with probabilities: accept iff u * q(d) < p(d) (rejection.h)
  kVerifyBlock = 4,        // drafts with probabilities judged as one block (block_verify.h)
};

// Fields named as the schema's arguments, filled by the generated
// verify_draft_tokens_params(call) (build/gen/fastspec/params/); the sizes of
// the strategy's own tensors (T, Kc, V) by custom_ops/dispatch/verify_draft_tokens.cc.
struct VerifyDraftTokensParams {
  int64_t* accept_tokens;              // [B, K + 1] int64, in place
  int32_t* accept_num;                 // [B] int32, in place
  const int64_t* draft_tokens;         // [B, K + 1] int64
  const int64_t* target_tokens;        // [T] int64: GREEDY, TARGET_MATCH (else unused)
  const int64_t* candidate_ids;        // [T, Kc] int64: TOPP (else unused)
  const float* candidate_scores;       // [T, Kc] float32: TOPP
  const int32_t* candidate_lens;       // [T] int32: TOPP
  const int64_t* seed;                 // [B] int64
  const int64_t* step_idx;             // [B] int64
  const bool* stop_flags;              // [B] bool
  const bool* is_block_step;           // [B] bool
  const int32_t* seq_lens_encoder;     // [B] int32
  const int32_t* seq_lens_this_time;   // [B] int32
  const int32_t* cu_seqlens_q_output;  // [B + 1] int32
  const int32_t* reasoning_status;     // [B] int32, or nullptr (no slot is reasoning)
  const int64_t* max_dec_len;          // [B] int64
  const int64_t* end_tokens;           // [E] int64, E >= 1
  const void* target_probs;            // [T, V] f32 / f16 / bf16: REJECTION, BLOCK (p)
  int32_t target_probs_dtype;          // ProbDtype of target_probs and draft_probs
  const void* draft_probs;             // [T, V]: REJECTION, BLOCK (q)
  int32_t draft_probs_dtype;           // = target_probs_dtype (the front ends check)
  int64_t batch;                       // B
  int64_t draft_cols;                  // K + 1
  int64_t rows;                        // T (0 when the strategy's tensors are left out)
  int64_t candidate_cols;              // Kc (TOPP)
  int64_t vocab;                       // V (REJECTION, BLOCK)
  int64_t num_end_tokens;              // E
  int32_t strategy;                    // VerifyStrategy
  bool accept_all;
  bool reject_all;                     // wins over accept_all

  FS_HD RejectionRows rejection() const { return {target_probs, draft_probs, target_probs_dtype, vocab}; }
};

// The strategies the kernels know; every backend refuses any other.
FS_HD bool verify_strategy_ok(int32_t strategy) { return strategy >= kVerifyTopp && strategy <= kVerifyBlock; }

// Strategies that read target_probs and draft_probs.
FS_HD bool verify_reads_probs(int32_t strategy) { return strategy == kVerifyRejection || strategy == kVerifyBlock; }

// Number of usable candidates of row t: clamp(candidate_lens[t], 0, K').
FS_HD int64_t verify_candidate_len(const VerifyDraftTokensParams& a, int64_t t) {
  return min64(max64(a.candidate_lens[t], 0), a.candidate_cols);
}

// Does the strategy accept draft d >= 0 at output row t (deciding `position`
// of request b)? accept_all and negative drafts are verify_slot_with's.
FS_HD bool verify_accepts(const VerifyDraftTokensParams& a, int64_t b, int64_t t, int64_t d, int64_t position) {
  if (verify_reads_probs(a.strategy)) return rejection_accepts(a.rejection(), t, d, a.seed[b], position);
  if (a.strategy == kVerifyTopp) {
    const int64_t* ids = a.candidate_ids + t * a.candidate_cols;
    const int64_t len = verify_candidate_len(a, t);
    for (int64_t j = 0; j < len; ++j) {
      if (ids[j] == d) return true;
    }
    return false;
  }
  return d == a.target_tokens[t];
}

// The correction / bonus token of output row t, deciding position `position`
// of request b; `weight`: kDrawTarget when no draft was rejected at this row,
// else the weight of the residual (kMassOne for REJECTION, w_i for BLOCK);
// only REJECTION and BLOCK read it. -1 (or any negative value) when the row
// has none: verify_slot_with emits end_tokens[0].
FS_HD int64_t verify_correction(const VerifyDraftTokensParams& a, int64_t b, int64_t t, int64_t position,
                                int64_t weight) {
  int64_t token = -1;
  if (verify_reads_probs(a.strategy)) {
    token = rejection_correction(a.rejection(), t, weight, a.seed[b], position);
  } else if (a.strategy == kVerifyTopp) {
    const int64_t len = verify_candidate_len(a, t);
    if (len > 0) {
      const int64_t* ids = a.candidate_ids + t * a.candidate_cols;
      const float* scores = a.candidate_scores + t * a.candidate_cols;
      int64_t total = 0;
      for (int64_t j = 0; j < len; ++j) total += prob_mass(scores[j]);
      int64_t pick = 0;  // total == 0: the first candidate
      if (total > 0) {
        const uint64_t point = draw_point(rand64(a.seed[b], position, kStreamTopp), total);
        uint64_t cumulative = 0;
        for (pick = 0; pick + 1 < len; ++pick) {
          cumulative += static_cast<uint64_t>(prob_mass(scores[pick]));
          if (cumulative > point) break;
        }
      }
      token = ids[pick];
    }
  } else {
    token = a.target_tokens[t];
  }
  return token;
}

// How verify_slot_with reads the strategy's rows (targets, candidates,
// probabilities): here straight from the params (CPU, CUDA). The XPU kernel
// streams them from global memory instead (custom_ops/xpu).
struct VerifyRowsInMemory {
  FS_HD bool accepts(const VerifyDraftTokensParams& a, int64_t b, int64_t t, int64_t d, int64_t position) const {
    return verify_accepts(a, b, t, d, position);
  }
  FS_HD int64_t correction(const VerifyDraftTokensParams& a, int64_t b, int64_t t, int64_t position,
                           int64_t weight) const {
    return verify_correction(a, b, t, position, weight);
  }
  // BLOCK's reads (block_verify.h): one draft's masses, one row's gain and loss.
  FS_HD bool draft_masses(const VerifyDraftTokensParams& a, int64_t t, int64_t d, int64_t* mp, int64_t* mq) const {
    if (d < 0 || d >= a.vocab) return false;
    *mp = rejection_mass(a.target_probs, a.target_probs_dtype, a.vocab, t, d);
    *mq = rejection_mass(a.draft_probs, a.target_probs_dtype, a.vocab, t, d);
    return true;
  }
  FS_HD void block_sums(const VerifyDraftTokensParams& a, int64_t t, int64_t weight, uint64_t* gain,
                        uint64_t* loss) const {
    block_row_sums(a.rejection(), t, weight, gain, loss);
  }
};

// The per-slot rule (docs/ops/verify_draft_tokens.md "Rules"). Writes
// accept_tokens[b, :] and accept_num[b]. A negative draft is never accepted
// (the op never emits -1), not even under accept_all; a correction that is not
// a real token becomes end_tokens[0].
template <class Rows>
FS_HD void verify_slot_with(const VerifyDraftTokensParams& a, int64_t b, const Rows& rows) {
  int64_t* out = a.accept_tokens + b * a.draft_cols;
  for (int64_t k = 0; k < a.draft_cols; ++k) out[k] = -1;
  a.accept_num[b] = 0;

  JudgedRows judged;
  if (!judged_rows(a, b, &judged)) return;
  const bool prefill = judged.prefill;
  const int64_t need = judged.need;
  const int64_t first_row = judged.first;

  // Drafts beyond column K cannot be read: a decode slot judges at most K.
  const int64_t drafts = (prefill || a.reject_all || (a.reasoning_status && a.reasoning_status[b] == 1))
                             ? 0
                             : min64(need - 1, a.draft_cols - 1);
  SlotEmitter emitter = slot_emitter(a, b, out);
  bool ended = false;

  // BLOCK judges all drafts at once, before any is emitted (block_verify.h).
  const bool as_block = a.strategy == kVerifyBlock && !a.accept_all && drafts > 0;
  int64_t block_residual = kMassOne;
  const int64_t block_len = as_block ? block_accepted(a, rows, a.draft_tokens + b * a.draft_cols, first_row, drafts,
                                                      a.seed[b], a.step_idx[b], &block_residual)
                                     : 0;
  int64_t i = 0;
  bool rejected = false;
  for (; i < drafts; ++i) {
    const int64_t d = a.draft_tokens[b * a.draft_cols + i + 1];
    const int64_t position = static_cast<int64_t>(static_cast<uint64_t>(a.step_idx[b]) + i);
    const bool accepted = as_block ? i < block_len : (a.accept_all || rows.accepts(a, b, first_row + i, d, position));
    if (d < 0 || !accepted) {
      rejected = true;
      break;
    }
    if (emitter.emit(d)) {
      ended = true;
      break;
    }
  }
  if (!ended) {
    const int64_t position = static_cast<int64_t>(static_cast<uint64_t>(a.step_idx[b]) + i);
    const int64_t weight = !rejected ? kDrawTarget : as_block ? block_residual : kMassOne;
    const int64_t token = rows.correction(a, b, first_row + i, position, weight);
    emitter.emit(token < 0 ? a.end_tokens[0] : token);
  }
  a.accept_num[b] = static_cast<int32_t>(emitter.count);
}

FS_HD void verify_slot(const VerifyDraftTokensParams& a, int64_t b) { verify_slot_with(a, b, VerifyRowsInMemory{}); }

// CPU: threads across slots. Returns kOk, or kInvalidArgument for an
// unsupported strategy. REJECTION scans V entries per correction / bonus;
// BLOCK also scans a row per prefix it tries (at most K).
// XPU: one launch, one core per slot; each core stages its slot in local
// memory and streams the strategy's rows from global memory (custom_ops/xpu).
// CUDA: one launch, one thread per slot. No allocation, no host
// synchronisation: safe inside CUDA Graph capture. Batches above
// kMaxCudaBatch get cudaErrorInvalidValue. REJECTION's thread scans V entries
// per correction / bonus draw.
FASTSPEC_LAUNCHERS(verify_draft_tokens, VerifyDraftTokensParams);

}  // namespace fastspec

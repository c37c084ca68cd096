// Every XPU kernel as its host launcher sees it (custom_ops/xpu/host): the
// same signatures as the __global__ definitions in the .xpu files, declared
// with __attribute__((global)) under XTDK and as plain functions under the
// emulation (where the .xpu files include this header too, so a signature
// that drifts fails to compile). Pointers are global memory; 64-bit integers
// are xpu_int64 on both sides (xpu_types.h).
#pragma once

#include "xpu_launch.h"

namespace fastspec {
namespace xpu {

FS_XPU_KERNEL_DECL void ngram_match_kernel(const xpu_int64* token_ids_all, const xpu_int64* prompt_lens,
                                           const xpu_int64* step_idx, const int* draft_token_num,
                                           xpu_int64* draft_tokens, int* seq_lens_this_time,
                                           const int* seq_lens_encoder, const int* seq_lens_decoder,
                                           const xpu_int64* max_dec_len, xpu_int64* ngram_anchor, xpu_int64 batch,
                                           xpu_int64 max_model_len, xpu_int64 draft_cols, int max_ngram_size,
                                           int min_ngram_size);

FS_XPU_KERNEL_DECL void ngram_append_kernel(const xpu_int64* token_ids_all, const xpu_int64* prompt_lens,
                                            const xpu_int64* step_idx, const int* draft_token_num,
                                            xpu_int64* draft_tokens, int* seq_lens_this_time,
                                            const int* seq_lens_encoder, const int* seq_lens_decoder,
                                            const xpu_int64* max_dec_len, xpu_int64* ngram_anchor, xpu_int64 batch,
                                            xpu_int64 max_model_len, xpu_int64 draft_cols, int max_ngram_size,
                                            int min_ngram_size);

FS_XPU_KERNEL_DECL void ngram_budget_kernel(int* seq_lens_this_time, const int* seq_lens_encoder,
                                            const int* seq_lens_decoder, xpu_int64* draft_tokens, xpu_int64 batch,
                                            xpu_int64 draft_cols, xpu_int64 token_budget);

FS_XPU_KERNEL_DECL void top_p_candidates_kernel(const unsigned char* probs, int probs_dtype, const float* top_p,
                                                const int* batch_id_per_token_output, xpu_int64* candidate_ids,
                                                float* candidate_scores, int* candidate_lens, xpu_int64 rows,
                                                xpu_int64 vocab, xpu_int64 batch, int max_candidate_len);

FS_XPU_KERNEL_DECL void sample_tokens_kernel(const unsigned char* probs, int probs_dtype, const float* top_p,
                                             const int* top_k, const xpu_int64* seed, const xpu_int64* step_idx,
                                             const int* batch_id_per_token_output, const int* cu_seqlens_q_output,
                                             xpu_int64* tokens, xpu_int64 rows, xpu_int64 vocab, xpu_int64 batch,
                                             unsigned int rand_stream);

FS_XPU_KERNEL_DECL void top_k_top_p_probs_kernel(const unsigned char* probs, int probs_dtype, const float* top_p,
                                                 const int* top_k, const int* batch_id_per_token_output,
                                                 float* target_probs, xpu_int64 rows, xpu_int64 vocab, xpu_int64 batch);

FS_XPU_KERNEL_DECL void verify_draft_tokens_kernel(
    xpu_int64* accept_tokens, int* accept_num, const xpu_int64* draft_tokens, const xpu_int64* target_tokens,
    const xpu_int64* candidate_ids, const float* candidate_scores, const int* candidate_lens, const xpu_int64* seed,
    const xpu_int64* step_idx, const bool* stop_flags, const bool* is_block_step, const int* seq_lens_encoder,
    const int* seq_lens_this_time, const int* cu_seqlens_q_output, const int* reasoning_status,
    const xpu_int64* max_dec_len, const xpu_int64* end_tokens, const unsigned char* target_probs,
    const unsigned char* draft_probs, int probs_dtype, xpu_int64 vocab, xpu_int64 batch, xpu_int64 draft_cols,
    xpu_int64 rows, xpu_int64 candidate_cols, xpu_int64 num_end_tokens, int strategy, bool accept_all, bool reject_all);

FS_XPU_KERNEL_DECL void update_model_status_kernel(
    int* seq_lens_encoder, int* seq_lens_decoder, int* seq_lens_this_time, xpu_int64* step_idx, bool* stop_flags,
    xpu_int64* accept_tokens, int* accept_num, xpu_int64* draft_tokens, xpu_int64* token_ids_all,
    const xpu_int64* prompt_lens, const bool* is_block_step, const xpu_int64* max_dec_len, const xpu_int64* end_tokens,
    bool* has_running, xpu_int64 batch, xpu_int64 draft_cols, xpu_int64 max_model_len, xpu_int64 num_end_tokens);

FS_XPU_KERNEL_DECL void adaptive_plan_kernel(const float* acceptance, const float* found, const float* step_cost,
                                             const float* rates, const int* seq_lens_encoder, const bool* stop_flags,
                                             const bool* is_block_step, xpu_int64* probe_step, int* draft_token_num,
                                             float* worth, int* ranking, xpu_int64 batch, xpu_int64 draft_cols,
                                             xpu_int64 cost_len, int probe_interval);

FS_XPU_KERNEL_DECL void adaptive_observe_kernel(float* acceptance, float* found, const int* draft_token_num,
                                                const int* cu_seqlens_q_output, const int* accept_num,
                                                const float* rates, xpu_int64 batch, xpu_int64 draft_cols);
FS_XPU_KERNEL_DECL void build_draft_tree_kernel(const xpu_int64* candidate_tokens, const int* candidate_parents,
                                                const float* candidate_scores, xpu_int64* draft_tree_tokens,
                                                int* seq_lens_this_time, const int* seq_lens_encoder,
                                                const int* seq_lens_decoder, int* draft_tree_parents,
                                                int* draft_tree_depths, xpu_int64 batch, xpu_int64 tree_cols,
                                                xpu_int64 candidate_count, int max_depth);

FS_XPU_KERNEL_DECL void verify_draft_tree_kernel(
    xpu_int64* accept_tokens, int* accept_num, const xpu_int64* draft_tree_tokens, const int* draft_tree_parents,
    const xpu_int64* target_tokens, const xpu_int64* seed, const xpu_int64* step_idx, const bool* stop_flags,
    const bool* is_block_step, const int* seq_lens_encoder, const int* seq_lens_this_time,
    const int* cu_seqlens_q_output, const xpu_int64* max_dec_len, const xpu_int64* end_tokens,
    const unsigned char* target_probs, const unsigned char* draft_probs, int probs_dtype, xpu_int64 vocab,
    int* accept_nodes, xpu_int64 batch, xpu_int64 draft_cols, xpu_int64 tree_cols, xpu_int64 rows,
    xpu_int64 num_end_tokens, int strategy);

FS_XPU_KERNEL_DECL void model_inputs_kernel(const xpu_int64* token_ids_all, const xpu_int64* prompt_lens,
                                            const xpu_int64* step_idx, const int* seq_lens_encoder,
                                            const xpu_int64* draft_tokens, const int* cu_seqlens_q_output,
                                            const int* batch_id_per_token_output, xpu_int64* tokens, xpu_int64* lengths,
                                            xpu_int64* row_pos, xpu_int64 batch, xpu_int64 max_model_len,
                                            xpu_int64 draft_cols, xpu_int64 rows);

FS_XPU_KERNEL_DECL void pack_rows_kernel(const bool* stop_flags, const bool* is_block_step, const int* seq_lens_encoder,
                                         const int* seq_lens_decoder, xpu_int64* draft_tokens, int* seq_lens_this_time,
                                         int* cu_seqlens_q_output, int* batch_id_per_token_output,
                                         const xpu_int64* proposal_tokens, const int* proposal_lens,
                                         xpu_int64* step_record, xpu_int64 batch, xpu_int64 draft_cols, xpu_int64 rows);

FS_XPU_KERNEL_DECL void temperature_softmax_kernel(const float* logits, const float* temperature,
                                                   const int* batch_id_per_token_output, float* probs, xpu_int64 rows,
                                                   xpu_int64 vocab, xpu_int64 batch);

FS_XPU_KERNEL_DECL void process_logits_kernel(
    float* logits, const xpu_int64* token_ids_all, const xpu_int64* prompt_lens, const xpu_int64* step_idx,
    const xpu_int64* draft_tokens, const int* batch_id_per_token_output, const int* cu_seqlens_q_output,
    const float* repetition_penalty, const float* presence_penalty, const float* frequency_penalty,
    const xpu_int64* min_tokens, const xpu_int64* end_tokens, const xpu_int64* stop_token_ids,
    const xpu_int64* logit_bias_ids, const float* logit_bias_values, const xpu_int64* bad_words,
    const int* draft_parents, xpu_int64 rows, xpu_int64 vocab, xpu_int64 batch, xpu_int64 max_model_len,
    xpu_int64 draft_cols, xpu_int64 num_end_tokens, xpu_int64 stop_cols, xpu_int64 bias_cols, xpu_int64 bad_words_cols);

FS_XPU_KERNEL_DECL void apply_token_bitmask_kernel(unsigned char* logits, int logits_dtype, const int* token_bitmask,
                                                   const int* bitmask_index, xpu_int64 rows, xpu_int64 vocab,
                                                   xpu_int64 mask_rows, xpu_int64 mask_words);

// emulation/probes.xpu: kernels that break one rule each (emulation tests only).
FS_XPU_KERNEL_DECL void probe_kernel(int which, const int* in, int* out, int n);

}  // namespace xpu
}  // namespace fastspec

// Host launcher of verify_draft_tokens on the XPU: one launch, one core per slot.
#include "fastspec/verify_draft_tokens.h"
#include "kernels.h"

namespace fastspec {

int verify_draft_tokens_xpu(const VerifyDraftTokensParams& p, const XpuGrid& grid) {
  if (!xpu::grid_ok(grid) || p.batch < 0 || p.draft_cols < 1 || p.draft_cols > xpu::kMaxDraftCols ||
      p.num_end_tokens < 1 || p.num_end_tokens > xpu::kMaxEndTokens || !verify_strategy_ok(p.strategy)) {
    return kInvalidArgument;
  }
  if (p.batch == 0) return kOk;
  const RejectionRows r = p.rejection();
  return FS_XPU_LAUNCH(grid.clusters, grid, xpu::verify_draft_tokens_kernel, xpu::i64(p.accept_tokens), p.accept_num,
                       xpu::i64(p.draft_tokens), xpu::i64(p.target_tokens), xpu::i64(p.candidate_ids),
                       p.candidate_scores, p.candidate_lens, xpu::i64(p.seed), xpu::i64(p.step_idx), p.stop_flags,
                       p.is_block_step, p.seq_lens_encoder, p.seq_lens_this_time, p.cu_seqlens_q_output,
                       p.reasoning_status, xpu::i64(p.max_dec_len), xpu::i64(p.end_tokens),
                       static_cast<const unsigned char*>(r.target_probs), r.dtype,
                       static_cast<const unsigned char*>(r.draft_probs), r.dtype, p.batch, p.draft_cols, p.rows,
                       p.candidate_cols, p.num_end_tokens, r.vocab, p.strategy, p.accept_all, p.reject_all);
}

}  // namespace fastspec

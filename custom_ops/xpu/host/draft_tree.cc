// Host launchers of build_draft_tree and verify_draft_tree on the XPU: one launch each, one core per slot.
#include "fastspec/draft_tree.h"
#include "kernels.h"

namespace fastspec {

int build_draft_tree_xpu(const BuildDraftTreeParams& p, const XpuGrid& grid) {
  if (!xpu::grid_ok(grid) || !build_tree_sizes_ok(p)) return kInvalidArgument;
  if (p.batch == 0) return kOk;
  return FS_XPU_LAUNCH(grid.clusters, grid, xpu::build_draft_tree_kernel, xpu::i64(p.candidate_tokens),
                       p.candidate_parents, p.candidate_scores, xpu::i64(p.draft_tree_tokens), p.seq_lens_this_time,
                       p.seq_lens_encoder, p.seq_lens_decoder, p.draft_tree_parents, p.draft_tree_depths, p.batch,
                       p.candidate_count, p.tree_cols, p.max_depth);
}

int verify_draft_tree_xpu(const VerifyDraftTreeParams& p, const XpuGrid& grid) {
  if (!xpu::grid_ok(grid) || !verify_tree_sizes_ok(p) || p.num_end_tokens > xpu::kMaxEndTokens) {
    return kInvalidArgument;
  }
  if (p.batch == 0) return kOk;
  const RejectionRows r = p.rejection();
  return FS_XPU_LAUNCH(grid.clusters, grid, xpu::verify_draft_tree_kernel, xpu::i64(p.accept_tokens), p.accept_num,
                       xpu::i64(p.draft_tree_tokens), p.draft_tree_parents, xpu::i64(p.target_tokens), xpu::i64(p.seed),
                       xpu::i64(p.step_idx), p.stop_flags, p.is_block_step, p.seq_lens_encoder, p.seq_lens_this_time,
                       p.cu_seqlens_q_output, xpu::i64(p.max_dec_len), xpu::i64(p.end_tokens),
                       static_cast<const unsigned char*>(r.target_probs), r.dtype,
                       static_cast<const unsigned char*>(r.draft_probs), r.dtype, p.accept_nodes, p.batch, p.draft_cols,
                       p.tree_cols, p.rows, p.num_end_tokens, r.vocab, p.strategy);
}

}  // namespace fastspec

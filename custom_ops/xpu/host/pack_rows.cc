// Host launcher of pack_rows on the XPU: one launch, one core does the work.
#include "fastspec/pack_rows.h"
#include "kernels.h"

namespace fastspec {

int pack_rows_xpu(const PackRowsParams& p, const XpuGrid& grid) {
  if (!xpu::grid_ok(grid) || !pack_rows_sizes_ok(p) || p.draft_cols > xpu::kMaxDraftCols) return kInvalidArgument;
  return FS_XPU_LAUNCH(grid.clusters, grid, xpu::pack_rows_kernel, p.stop_flags, p.is_block_step, p.seq_lens_encoder,
                       p.seq_lens_decoder, xpu::i64(p.draft_tokens), p.seq_lens_this_time, p.cu_seqlens_q_output,
                       p.batch_id_per_token_output, xpu::i64(p.proposal_tokens), p.proposal_lens,
                       xpu::i64(p.step_record), p.batch, p.draft_cols, p.rows);
}

}  // namespace fastspec

// Host launcher of step_status on the XPU: one launch over the grid.
#include "fastspec/step_status.h"
#include "kernels.h"

namespace fastspec {

int step_status_xpu(const StepStatusParams& p, const XpuGrid& grid) {
  if (!xpu::grid_ok(grid) || !step_status_sizes_ok(p) || p.draft_cols > xpu::kMaxDraftCols) return kInvalidArgument;
  return FS_XPU_LAUNCH(grid.clusters, grid, xpu::step_status_kernel, xpu::i64(p.step_record), p.accept_num,
                       xpu::i64(p.accept_tokens), p.stop_flags, p.is_block_step, p.seq_lens_encoder, p.seq_lens_decoder,
                       xpu::i64(p.status), p.batch, p.draft_cols);
}

}  // namespace fastspec

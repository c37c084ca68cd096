// Host launchers of adaptive_plan (one cluster) and adaptive_observe (the grid) on the XPU.
#include "fastspec/adaptive.h"
#include "kernels.h"

namespace fastspec {

int adaptive_plan_xpu(const AdaptivePlanParams& p, const XpuGrid& grid) {
  if (!xpu::grid_ok(grid) || p.batch < 1 || p.draft_cols < 2 || p.draft_cols > xpu::kMaxDraftCols || p.cost_len < 1 ||
      p.batch * p.draft_cols > 0x7fffffff) {
    return kInvalidArgument;
  }
  return FS_XPU_LAUNCH(1, grid, xpu::adaptive_plan_kernel, p.acceptance, p.found, p.step_cost, p.rates,
                       p.seq_lens_encoder, p.stop_flags, p.is_block_step, xpu::i64(p.probe_step), p.draft_token_num,
                       p.worth, p.ranking, p.batch, p.draft_cols, p.cost_len, p.probe_interval);
}

int adaptive_observe_xpu(const AdaptiveObserveParams& p, const XpuGrid& grid) {
  if (!xpu::grid_ok(grid) || p.batch < 1 || p.draft_cols < 2 || p.draft_cols > xpu::kMaxDraftCols) {
    return kInvalidArgument;
  }
  return FS_XPU_LAUNCH(grid.clusters, grid, xpu::adaptive_observe_kernel, p.acceptance, p.found, p.draft_token_num,
                       p.cu_seqlens_q_output, p.accept_num, p.rates, p.batch, p.draft_cols);
}

}  // namespace fastspec

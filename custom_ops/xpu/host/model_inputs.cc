// Host launcher of model_inputs on the XPU: one launch over the grid.
#include "fastspec/model_inputs.h"
#include "kernels.h"

namespace fastspec {

int model_inputs_xpu(const ModelInputsParams& p, const XpuGrid& grid) {
  if (!xpu::grid_ok(grid) || !model_inputs_sizes_ok(p) || p.draft_cols > xpu::kMaxDraftCols) return kInvalidArgument;
  return FS_XPU_LAUNCH(grid.clusters, grid, xpu::model_inputs_kernel, xpu::i64(p.token_ids_all),
                       xpu::i64(p.prompt_lens), xpu::i64(p.step_idx), p.seq_lens_encoder, xpu::i64(p.draft_tokens),
                       p.cu_seqlens_q_output, p.batch_id_per_token_output, xpu::i64(p.tokens), xpu::i64(p.lengths),
                       xpu::i64(p.row_pos), p.batch, p.max_model_len, p.draft_cols, p.rows);
}

}  // namespace fastspec

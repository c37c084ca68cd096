// Host launcher of update_model_status on the XPU: one launch of one cluster
// (also for an empty batch: has_running must still be written).
#include "fastspec/update_model_status.h"
#include "kernels.h"

namespace fastspec {

int update_model_status_xpu(const UpdateModelStatusParams& p, const XpuGrid& grid) {
  if (!xpu::grid_ok(grid) || p.batch < 0 || p.draft_cols < 1 || p.draft_cols > xpu::kMaxDraftCols ||
      p.num_end_tokens < 1 || p.num_end_tokens > xpu::kMaxEndTokens ||
      (p.stop_token_ids != nullptr && (p.stop_cols < 1 || p.stop_cols > xpu::kMaxStopCols)) ||
      (p.stop_sequences != nullptr && (p.stop_sequence_cols < 1 || p.stop_sequence_cols > xpu::kMaxStopCols))) {
    return kInvalidArgument;
  }
  return FS_XPU_LAUNCH(1, grid, xpu::update_model_status_kernel, p.seq_lens_encoder, p.seq_lens_decoder,
                       p.seq_lens_this_time, xpu::i64(p.step_idx), p.stop_flags, xpu::i64(p.accept_tokens),
                       p.accept_num, xpu::i64(p.draft_tokens), xpu::i64(p.token_ids_all), xpu::i64(p.prompt_lens),
                       p.is_block_step, xpu::i64(p.max_dec_len), xpu::i64(p.end_tokens), xpu::i64(p.stop_token_ids),
                       xpu::i64(p.stop_sequences), xpu::i64(p.min_tokens), p.has_running, p.batch, p.draft_cols,
                       p.max_model_len, p.num_end_tokens, p.stop_cols, p.stop_sequence_cols);
}

}  // namespace fastspec

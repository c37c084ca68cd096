// Host launcher of process_logits on the XPU: rows across every core of the grid.
#include "fastspec/process_logits.h"
#include "kernels.h"

namespace fastspec {

int process_logits_xpu(const ProcessLogitsParams& p, const XpuGrid& grid) {
  if (!xpu::grid_ok(grid) || p.rows < 0 || p.draft_cols < 1 || p.draft_cols > kMaxLogitsPath) {
    return kInvalidArgument;
  }
  if (p.rows == 0) return kOk;
  return FS_XPU_LAUNCH(grid.clusters, grid, xpu::process_logits_kernel, p.logits, xpu::i64(p.token_ids_all),
                       xpu::i64(p.prompt_lens), xpu::i64(p.step_idx), xpu::i64(p.draft_tokens),
                       p.batch_id_per_token_output, p.cu_seqlens_q_output, p.repetition_penalty, p.presence_penalty,
                       p.frequency_penalty, xpu::i64(p.min_tokens), xpu::i64(p.end_tokens), xpu::i64(p.stop_token_ids),
                       xpu::i64(p.logit_bias_ids), p.logit_bias_values, xpu::i64(p.bad_words), p.draft_parents, p.rows,
                       p.vocab, p.batch, p.max_model_len, p.draft_cols, p.num_end_tokens, p.stop_cols, p.bias_cols,
                       p.bad_words_cols);
}

}  // namespace fastspec

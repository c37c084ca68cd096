// Host launcher of ngram_append on the XPU: the search kernel on every
// cluster of the grid, then (token_budget > 0) ngram_match's budget kernel.
#include "fastspec/ngram_append.h"
#include "kernels.h"

namespace fastspec {

bool ngram_xpu_sizes_ok(const NgramMatchParams& p, const XpuGrid& grid);  // host/ngram_match.cc

int ngram_append_xpu(const NgramMatchParams& p, const XpuGrid& grid) {
  if (!ngram_xpu_sizes_ok(p, grid)) return kInvalidArgument;
  if (p.batch == 0) return kOk;
  const int status = FS_XPU_LAUNCH(grid.clusters, grid, xpu::ngram_append_kernel, xpu::i64(p.token_ids_all),
                                   xpu::i64(p.prompt_lens), xpu::i64(p.step_idx), p.draft_token_num,
                                   xpu::i64(p.draft_tokens), p.seq_lens_this_time, p.seq_lens_encoder,
                                   p.seq_lens_decoder, xpu::i64(p.max_dec_len), p.batch, p.max_model_len,
                                   p.draft_cols, p.max_ngram_size, p.min_ngram_size);
  if (status != kOk || p.token_budget <= 0) return status;
  return ngram_budget_xpu(p, grid);
}

}  // namespace fastspec

// Host launchers of ngram_match and ngram_append on the XPU: the op's search
// kernel on every cluster of the grid, then (token_budget > 0) the budget
// kernel on one.
#include "fastspec/ngram_append.h"
#include "fastspec/ngram_match.h"
#include "kernels.h"

namespace fastspec {
namespace {

using SearchKernel = decltype(&xpu::ngram_match_kernel);  // both ops' search kernels take the same arguments

// The kernel is a template argument, so each launch names its kernel at compile time (no launch
// through a function pointer, which the XPU toolchain is not known to support).
template <SearchKernel search>
int search_then_budget(const NgramMatchParams& p, const XpuGrid& grid) {
  if (!xpu::grid_ok(grid) || p.batch < 0 || p.draft_cols < 1 || p.draft_cols > xpu::kMaxDraftCols ||
      p.max_model_len < 0) {
    return kInvalidArgument;
  }
  if (p.batch == 0) return kOk;
  const int status =
      FS_XPU_LAUNCH(grid.clusters, grid, search, xpu::i64(p.token_ids_all), xpu::i64(p.prompt_lens),
                    xpu::i64(p.step_idx), p.draft_token_num, xpu::i64(p.draft_tokens), p.seq_lens_this_time,
                    p.seq_lens_encoder, p.seq_lens_decoder, xpu::i64(p.max_dec_len), xpu::i64(p.ngram_anchor), p.batch,
                    p.max_model_len, p.draft_cols, p.max_ngram_size, p.min_ngram_size, p.token_budget);
  if (status != kOk || p.token_budget <= 0) return status;
  return ngram_budget_xpu(p, grid);
}

}  // namespace

int ngram_budget_xpu(const NgramMatchParams& p, const XpuGrid& grid) {
  return FS_XPU_LAUNCH(1, grid, xpu::ngram_budget_kernel, p.seq_lens_this_time, p.seq_lens_encoder, p.seq_lens_decoder,
                       xpu::i64(p.draft_tokens), p.batch, p.draft_cols, p.token_budget);
}

int ngram_match_xpu(const NgramMatchParams& p, const XpuGrid& grid) {
  return search_then_budget<xpu::ngram_match_kernel>(p, grid);
}

int ngram_append_xpu(const NgramMatchParams& p, const XpuGrid& grid) {
  return search_then_budget<xpu::ngram_append_kernel>(p, grid);
}

}  // namespace fastspec

// Host launcher of emitted_logprobs on the XPU: one launch, a record per core.
#include "fastspec/emitted_logprobs.h"
#include "kernels.h"

namespace fastspec {

int emitted_logprobs_xpu(const EmittedLogprobsParams& p, const XpuGrid& grid) {
  if (!xpu::grid_ok(grid) || !logprobs_sizes_ok(p)) return kInvalidArgument;
  return FS_XPU_LAUNCH(grid.clusters, grid, xpu::emitted_logprobs_kernel, p.logits, p.temperature,
                       p.cu_seqlens_q_output, xpu::i64(p.accept_tokens), p.accept_num, p.accept_nodes,
                       xpu::i64(p.logprob_keys), p.rows, p.vocab, p.batch, p.draft_cols, p.width);
}

}  // namespace fastspec

// Host launcher of apply_token_bitmask on the XPU: one launch over the grid.
#include "fastspec/apply_token_bitmask.h"
#include "kernels.h"

namespace fastspec {

int apply_token_bitmask_xpu(const ApplyTokenBitmaskParams& p, const XpuGrid& grid) {
  if (!xpu::grid_ok(grid) || !bitmask_sizes_ok(p)) return kInvalidArgument;
  if (p.rows == 0) return kOk;
  return FS_XPU_LAUNCH(grid.clusters, grid, xpu::apply_token_bitmask_kernel, static_cast<unsigned char*>(p.logits),
                       p.logits_dtype, p.token_bitmask, p.bitmask_index, p.rows, p.vocab, p.mask_rows, p.mask_words);
}

}  // namespace fastspec

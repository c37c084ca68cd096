// Host launcher of temperature_softmax on the XPU: one launch, a row per core.
#include "fastspec/temperature_softmax.h"
#include "kernels.h"

namespace fastspec {

int temperature_softmax_xpu(const TemperatureSoftmaxParams& p, const XpuGrid& grid) {
  if (!xpu::grid_ok(grid) || !softmax_sizes_ok(p)) return kInvalidArgument;
  if (p.rows == 0) return kOk;
  return FS_XPU_LAUNCH(grid.clusters, grid, xpu::temperature_softmax_kernel, p.logits, p.temperature,
                       p.batch_id_per_token_output, p.probs, p.rows, p.vocab, p.batch);
}

}  // namespace fastspec

// step_status on the CPU: the slots in order, each slot's values in order, on one thread.
#include "fastspec/step_status.h"

namespace fastspec {

int step_status_cpu(const StepStatusParams& p) {
  if (!step_status_sizes_ok(p)) return kInvalidArgument;
  const int64_t cols = status_cols(p.draft_cols);
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t j = 0; j < cols; ++j) p.status[b * cols + j] = status_value(p, b, j);
  }
  return kOk;
}

}  // namespace fastspec

// update_model_status on the CPU: the shared per-slot rule, threads across
// slots once the batch is large enough, and has_running as an OR-reduction.
#include "fastspec/update_model_status.h"

namespace fastspec {
namespace {

constexpr int64_t kParallelSlots = 512;

}  // namespace

int update_model_status_cpu(const UpdateModelStatusParams& a) {
  int running = 0;
#pragma omp parallel for schedule(static) reduction(| : running) if (a.batch >= kParallelSlots)
  for (int64_t b = 0; b < a.batch; ++b) running |= update_slot(a, b) ? 1 : 0;
  *a.has_running = running != 0;
  return kOk;
}

}  // namespace fastspec

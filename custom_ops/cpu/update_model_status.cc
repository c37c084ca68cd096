// update_model_status on the CPU: the shared per-slot rule, then has_running.
// A slot costs tens of nanoseconds, so only very large batches are split
// across the pool; chunks OR their "still running" into one atomic flag.
#include "fastspec/update_model_status.h"

#include <atomic>

#include "fastspec/parallel.h"

namespace fastspec {

int update_model_status_cpu(const UpdateModelStatusParams& a) {
  std::atomic<bool> running{false};
  const auto run = [&a, &running](int64_t begin, int64_t end) {
    bool any = false;
    for (int64_t b = begin; b < end; ++b) any |= update_slot(a, b);
    if (any) running.store(true, std::memory_order_relaxed);
  };
  if (a.batch >= kParallelSlots) {
    parallel_for(a.batch, kSlotGrain, run);
  } else {
    run(0, a.batch);
  }
  *a.has_running = running.load();
  return kOk;
}

}  // namespace fastspec

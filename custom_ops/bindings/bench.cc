// Benchmark floors: the time to read a buffer once with the kernels' own
// thread pool, so a kernel's ratio to it compares like with like.
#include <algorithm>
#include <atomic>

#include "bindings.h"
#include "fastspec/parallel.h"

namespace fastspec_bindings {

void bind_bench(py::module_& m) {
  m.def("num_threads", &fastspec::num_threads, "threads the CPU kernels use");
  m.def(
      "read_once_cpu",
      [](uintptr_t address, int64_t count) {
        const auto* data = ptr<const uint64_t>(address);
        std::atomic<uint64_t> folded{0};
        py::gil_scoped_release release;
        const int64_t grain = std::max<int64_t>(1 << 16, count / (8 * fastspec::num_threads()));
        fastspec::parallel_for(count, grain, [&](int64_t begin, int64_t end) {
          uint64_t acc = 0;
#pragma GCC ivdep
          for (int64_t i = begin; i < end; ++i) acc |= data[i];
          folded.fetch_or(acc, std::memory_order_relaxed);
        });
        return folded.load();
      },
      py::arg("address"), py::arg("count"), "ORs `count` uint64 words (reads them once)");
}

}  // namespace fastspec_bindings

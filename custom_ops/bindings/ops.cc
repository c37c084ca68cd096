// One entry point for every op: fastspec.arrays (the pointer API) checks the
// call against the op's schema, then hands the tensors here as addresses,
// dtype codes and shapes in schema order (``run``), or numpy arrays whose checks it
// has memoised (``run_numpy``); this fills an OpCall and runs the launcher of the
// requested backend. Nothing here knows a particular op.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <vector>

#include "bindings.h"
#include "fastspec/op_call.h"

namespace fastspec_bindings {

namespace {

// Fills an OpCall and runs the launcher of `backend`; a refusal of the launcher as a Python error.
void launch(const std::string& op, int backend, std::vector<fastspec::TensorRef>& refs,
            const std::vector<int64_t>& attrs, uintptr_t stream, int num_threads, std::pair<int, int> xpu_grid,
            bool xpu_reverse_clusters) {
  fastspec::OpCall call;
  call.tensors = refs.data();
  call.attrs = attrs.data();
  call.backend = static_cast<fastspec::Backend>(backend);
  call.stream = ptr<void>(stream);
  call.num_threads = num_threads;
  call.xpu_grid.clusters = xpu_grid.first;
  call.xpu_grid.cores = xpu_grid.second;
  call.xpu_grid.reverse_clusters = xpu_reverse_clusters;
  int status;
  {
    py::gil_scoped_release release;
    status = fastspec::run(op.c_str(), call);
  }
  if (status == fastspec::kNoKernel) {
    throw std::invalid_argument(op + ": no " + fastspec::backend_name(call.backend) +
                                " kernel in this build (it has " + fastspec::backends_of(op.c_str()) + ")");
  }
  if (status != fastspec::kOk) {
    std::string what = std::to_string(status);
    if (status == fastspec::kXpuEmulationError) what = std::string("XPU emulation: ") + fastspec::xpu_emulation_error();
#if defined(FASTSPEC_WITH_CUDA)
    if (call.backend == fastspec::Backend::kCuda) what = cudaGetErrorString(static_cast<cudaError_t>(status));
#endif
    throw std::runtime_error(op + ": the " + fastspec::backend_name(call.backend) + " kernel failed: " + what);
  }
}

}  // namespace

void bind_ops(py::module_& m) {
  m.def(
      "run",
      [](const std::string& op, int backend, const std::vector<uintptr_t>& data, const std::vector<int>& dtypes,
         const std::vector<std::vector<int64_t>>& shapes, const std::vector<bool>& present,
         const std::vector<int64_t>& attrs, uintptr_t stream, int num_threads, std::pair<int, int> xpu_grid,
         bool xpu_reverse_clusters) {
        const size_t n = data.size();
        if (dtypes.size() != n || shapes.size() != n || present.size() != n) {
          throw std::invalid_argument(op + ": run() needs one dtype, shape and presence flag per tensor");
        }
        std::vector<fastspec::TensorRef> refs(n);
        for (size_t i = 0; i < n; ++i) {
          refs[i].data = ptr<void>(data[i]);
          refs[i].dtype = dtypes[i];
          refs[i].present = present[i];
          refs[i].rank = static_cast<int32_t>(shapes[i].size());
          for (size_t a = 0; a < 2; ++a) refs[i].shape[a] = a < shapes[i].size() ? shapes[i][a] : 1;
        }
        launch(op, backend, refs, attrs, stream, num_threads, xpu_grid, xpu_reverse_clusters);
      },
      py::arg("op"), py::arg("backend"), py::arg("data"), py::arg("dtypes"), py::arg("shapes"), py::arg("present"),
      py::arg("attrs"), py::arg("stream") = 0, py::arg("num_threads") = 0,
      py::arg("xpu_grid") = std::pair<int, int>(12, 64), py::arg("xpu_reverse_clusters") = false,
      "Runs `op` on raw tensors (schema order); fastspec.arrays checks the call first");
  m.def(
      "run_numpy",
      [](const std::string& op, const py::list& arrays, const std::vector<int>& dtypes,
         const std::vector<int64_t>& attrs, int num_threads) {
        // The CPU kernel on numpy arrays (None: absent) whose dtypes (codes) and shapes fastspec.arrays
        // has checked: address and shape are read here, at C speed, instead of through ndarray.ctypes.
        const size_t n = arrays.size();
        if (dtypes.size() != n) throw std::invalid_argument(op + ": run_numpy() needs one dtype per array");
        std::vector<fastspec::TensorRef> refs(n);
        for (size_t i = 0; i < n; ++i) {
          const py::handle item = arrays[i];
          if (item.is_none()) continue;
          if (!py::isinstance<py::array>(item)) throw std::invalid_argument(op + ": run_numpy() takes numpy arrays");
          const auto array = py::reinterpret_borrow<py::array>(item);
          refs[i].present = true;
          refs[i].data = const_cast<void*>(array.data());
          refs[i].dtype = dtypes[i];
          refs[i].rank = static_cast<int32_t>(array.ndim());
          for (py::ssize_t a = 0; a < 2; ++a) refs[i].shape[a] = a < array.ndim() ? array.shape(a) : 1;
        }
        launch(op, /*backend=*/0, refs, attrs, 0, num_threads, {12, 64}, false);
      },
      py::arg("op"), py::arg("arrays"), py::arg("dtypes"), py::arg("attrs"), py::arg("num_threads") = 0,
      "Runs `op`'s CPU kernel on numpy arrays (schema order) fastspec.arrays has checked");
  m.def(
      "xpu_probe",
      [](int which, std::pair<int, int> grid, std::vector<int> in) {
        fastspec::XpuGrid g;
        g.clusters = grid.first;
        g.cores = grid.second;
        std::vector<int> out(static_cast<size_t>(g.clusters) * g.cores, 0);
        const int status = fastspec::xpu_probe(which, in.data(), out.data(), static_cast<int>(in.size()), g);
        return py::make_tuple(status, std::string(status == fastspec::kOk ? "" : fastspec::xpu_emulation_error()), out);
      },
      py::arg("which"), py::arg("grid"), py::arg("values"),
      "runs emulation probe `which` (custom_ops/xpu/emulation/probes.xpu): (status, broken rule, out per core)");
  m.def("backends", [](const std::string& op) { return std::string(fastspec::backends_of(op.c_str())); },
        "the backends this build has a kernel of `op` for, e.g. 'cpu, cuda'");
}

}  // namespace fastspec_bindings

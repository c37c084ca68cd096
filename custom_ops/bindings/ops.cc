// One entry point for every op: fastspec.arrays (the pointer API) checks the
// call against the op's schema, then hands the tensors here as addresses,
// dtype codes and shapes in schema order (``run``), or numpy arrays whose checks it
// has memoised (``run_numpy``); this fills an OpCall and runs the launcher of the
// requested backend. Nothing here knows a particular op.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <vector>

#include "bindings.h"
#include "emulation/launchers.h"
#include "fastspec/op_call.h"

namespace fastspec_bindings {

namespace {

// Fills an OpCall and runs the launcher of `backend`; a refusal of the launcher as a Python error.
void launch(const std::string& op, int backend, std::vector<fastspec::TensorRef>& refs,
            const std::vector<int64_t>& attrs, uintptr_t stream, int num_threads, std::pair<int, int> xpu_grid,
            bool xpu_reverse_clusters, int cuda_block_order = 0, uint64_t cuda_shuffle_seed = 0) {
  fastspec::OpCall call;
  call.tensors = refs.data();
  call.num_tensors = static_cast<int32_t>(refs.size());
  call.attrs = attrs.data();
  call.backend = static_cast<fastspec::Backend>(backend);
  call.stream = ptr<void>(stream);
  call.num_threads = num_threads;
  call.xpu_grid.clusters = xpu_grid.first;
  call.xpu_grid.cores = xpu_grid.second;
  call.xpu_grid.reverse_clusters = xpu_reverse_clusters;
  call.cuda_block_order = cuda_block_order;
  call.cuda_shuffle_seed = cuda_shuffle_seed;
  int status;
  {
    py::gil_scoped_release release;
    status = fastspec::run(op.c_str(), call);
  }
  if (status == fastspec::kNoKernel) {
    throw std::invalid_argument(op + ": no " + fastspec::backend_name(call.backend) + " kernel in this build (it has " +
                                fastspec::backends_of(op.c_str()) + ")");
  }
  if (status != fastspec::kOk) {
    std::string what = std::to_string(status);
    if (status == fastspec::kXpuEmulationError) what = std::string("XPU emulation: ") + fastspec::xpu_emulation_error();
    if (status == fastspec::kCudaEmulationError)
      what = std::string("CUDA emulation: ") + fastspec::cuda_emulation_error();
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
         bool xpu_reverse_clusters, int cuda_block_order, uint64_t cuda_shuffle_seed) {
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
          for (size_t a = 0; a < 3; ++a) refs[i].shape[a] = a < shapes[i].size() ? shapes[i][a] : 1;
        }
        launch(op, backend, refs, attrs, stream, num_threads, xpu_grid, xpu_reverse_clusters, cuda_block_order,
               cuda_shuffle_seed);
      },
      py::arg("op"), py::arg("backend"), py::arg("data"), py::arg("dtypes"), py::arg("shapes"), py::arg("present"),
      py::arg("attrs"), py::arg("stream") = 0, py::arg("num_threads") = 0,
      py::arg("xpu_grid") = std::pair<int, int>(12, 64), py::arg("xpu_reverse_clusters") = false,
      py::arg("cuda_block_order") = 0, py::arg("cuda_shuffle_seed") = 0,
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
          for (py::ssize_t a = 0; a < 3; ++a) refs[i].shape[a] = a < array.ndim() ? array.shape(a) : 1;
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
  m.def(
      "cuda_probe",
      [](int which, std::vector<int> in, int n_out, int block_order, uint64_t seed) {
        std::vector<int> out(static_cast<size_t>(n_out), 0);
        cuda_emu::Session session;
        const auto range = [](const void* p, size_t bytes) {
          const auto begin = reinterpret_cast<uintptr_t>(p);
          return cuda_emu::Range{begin, begin + bytes};
        };
        session.arrays = {range(in.data(), in.size() * sizeof(int)), range(out.data(), out.size() * sizeof(int))};
        session.order = static_cast<cuda_emu::BlockOrder>(block_order);
        session.seed = seed;
        cuda_emu::Error status;
        {
          py::gil_scoped_release release;
          status = cuda_emu::run_session(session, [&] {
            return fastspec::cuda_probe_emulated(which, in.data(), static_cast<int>(in.size()), out.data(), n_out);
          });
        }
        return py::make_tuple(static_cast<int>(status),
                              std::string(status == cuda_emu::cudaSuccess ? "" : cuda_emu::last_error()), out);
      },
      py::arg("which"), py::arg("values"), py::arg("n_out"), py::arg("block_order") = 0, py::arg("seed") = 0,
      "runs CUDA emulation probe `which` (custom_ops/cuda/emulation/probes.cu): (status, broken rule, out)");
  m.def(
      "cuda_emulator_mutate",
      [](const std::string& file, int line, int64_t skip_block) {
        cuda_emu::Mutation mutation;
        mutation.file = file;
        mutation.line = line;
        mutation.skip_block = skip_block;
        cuda_emu::set_mutation(mutation);
      },
      py::arg("file") = "", py::arg("line") = 0, py::arg("skip_block") = -1,
      "for the mutation tests: the barrier at (a path ending in) file:line does nothing and/or the block of "
      "linear index skip_block never runs; no arguments: no mutation");
  m.def("cuda_emulator_barrier_sites", &cuda_emu::barrier_sites,
        "every barrier site (file:line) the emulated CUDA kernels have reached so far");
  m.def(
      "backends", [](const std::string& op) { return std::string(fastspec::backends_of(op.c_str())); },
      "the backends this build has a kernel of `op` for, e.g. 'cpu, cuda'");
}

}  // namespace fastspec_bindings

// Shared helpers of the pybind11 bindings. Tensors travel as raw addresses
// plus dtype codes and shapes; CUDA launches take a stream handle. The ops
// share one entry point (ops.cc); trees.cc checks verify_draft_tree's trees for the
// array API; rng.cc and bench.cc serve tests and benchmarks.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "fastspec/common.h"

namespace fastspec_bindings {

namespace py = pybind11;

template <typename T>
T* ptr(uintptr_t address) {
  return reinterpret_cast<T*>(address);
}

#if defined(FASTSPEC_WITH_CUDA)
inline cudaStream_t as_stream(uintptr_t handle) { return reinterpret_cast<cudaStream_t>(handle); }

inline void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}
#endif

void bind_build_info(py::module_& m);
void bind_bench(py::module_& m);
void bind_rng(py::module_& m);
void bind_ops(py::module_& m);
void bind_suffix(py::module_& m);
void bind_trees(py::module_& m);

}  // namespace fastspec_bindings

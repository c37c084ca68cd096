// The fastspec_kernels module: framework-free entry points to every kernel.
#include "bindings.h"

PYBIND11_MODULE(fastspec_kernels, m) {
  m.doc() = "fastspec kernels over raw pointers (no framework); see fastspec/arrays/__init__.py";
#if defined(FASTSPEC_WITH_CUDA)
  m.attr("with_cuda") = true;
#else
  m.attr("with_cuda") = false;
#endif
  fastspec_bindings::bind_build_info(m);
  fastspec_bindings::bind_bench(m);
  fastspec_bindings::bind_rng(m);
  fastspec_bindings::bind_ops(m);
  fastspec_bindings::bind_suffix(m);
  fastspec_bindings::bind_trees(m);
}

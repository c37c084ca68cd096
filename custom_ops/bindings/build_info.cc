// build_info(): what this build of the kernels holds and what they picked on
// this machine, for `python -m fastspec info` (fastspec/cli/info.py).
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "bindings.h"
#include "fastspec/cpu_features.h"
#include "fastspec/parallel.h"

#if !defined(FASTSPEC_CUDA_ARCH_LIST)
#define FASTSPEC_CUDA_ARCH_LIST ""  // setup_ops.py defines it in a CUDA build
#endif

namespace fastspec_bindings {

namespace {

// The levels compiled in: the portable loops always, the x86 SIMD ones on x86.
std::vector<std::string> simd_compiled() {
  std::vector<std::string> levels = {fastspec::simd_level_name(fastspec::kSimdScalar)};
#if FASTSPEC_X86
  levels.push_back(fastspec::simd_level_name(fastspec::kSimdAvx2));
  levels.push_back(fastspec::simd_level_name(fastspec::kSimdAvx512));
#endif
  return levels;
}

// The instruction set the whole library was compiled for (-march): "baseline"
// runs on any CPU of the architecture.
const char* compiled_for() {
#if defined(__AVX512F__)
  return "avx512 (-march)";
#elif defined(__AVX2__)
  return "avx2 (-march)";
#else
  return "baseline";
#endif
}

}  // namespace

void bind_build_info(py::module_& m) {
  m.def(
      "build_info",
      [] {
        py::dict info;
        info["simd_compiled"] = simd_compiled();
        info["simd_cpu"] = fastspec::simd_level_name(fastspec::cpu_simd_level());
        info["simd_picked"] = fastspec::simd_level_name(fastspec::simd_level());
        info["compiled_for"] = compiled_for();
        info["threads"] = fastspec::num_threads();
        info["xpu"] = "emulated";  // the bindings run the XPU kernels on host threads; XTDK builds only the op library
#if defined(FASTSPEC_WITH_CUDA)
        int devices = 0;
        const cudaError_t status = cudaGetDeviceCount(&devices);
        info["cuda"] = true;
        info["cuda_archs"] = std::string(FASTSPEC_CUDA_ARCH_LIST);
        info["cuda_devices"] = status == cudaSuccess ? devices : 0;
        info["cuda_status"] = status == cudaSuccess ? std::string("ok") : std::string(cudaGetErrorString(status));
#else
        info["cuda"] = false;
        info["cuda_archs"] = std::string();
        info["cuda_devices"] = 0;
        info["cuda_status"] = std::string("not built");
#endif
        return info;
      },
      "what this build holds (SIMD levels, CUDA archs) and what it picked here (SIMD level, threads, GPUs)");
}

}  // namespace fastspec_bindings

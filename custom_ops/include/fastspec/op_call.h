// One call of an op as every front end hands it to the kernels: the tensors in
// schema order (fastspec/core/schema.py), the attributes as integers, the
// backend and its stream. Front ends fill an OpCall and call fastspec::run;
// custom_ops/dispatch/ turns it into the op's params and picks the launcher.
#pragma once

#include <cstdint>

#include "fastspec/common.h"

namespace fastspec {

// kCudaEmulator: the CUDA kernels compiled for the host emulation (custom_ops/cuda/emulation).
enum class Backend : int32_t { kCpu = 0, kCuda = 1, kXpu = 2, kCudaEmulator = 3 };
constexpr int kNumBackends = 4;
const char* backend_name(Backend backend);

// Tensor element types; the numbering is shared with tools/codegen.py.
enum DType : int32_t { kBool = 0, kInt32 = 1, kInt64 = 2, kFloat32 = 3, kFloat16 = 4, kBFloat16 = 5 };

struct TensorRef {
  void* data = nullptr;
  int32_t dtype = -1;
  int32_t rank = 0;
  int64_t shape[3] = {0, 0, 0};  // rank <= 3; axes past the rank read 1
  bool present = false;  // false: an optional tensor left out (data may be null for an empty one too)
};

struct OpCall {
  const TensorRef* tensors = nullptr;  // schema order: inputs, then new outputs
  int32_t num_tensors = 0;
  const int64_t* attrs = nullptr;      // schema order; bool 0 / 1, a string as its index in the choices
  Backend backend = Backend::kCpu;
  void* stream = nullptr;              // cudaStream_t on CUDA, XPUStream on the XPU; unused on the CPU
  int32_t num_threads = 0;             // CPU: 1 runs on the calling thread, else the pool
  XpuGrid xpu_grid;                    // XPU: the launch's clusters x cores (its stream is `stream`)
  int32_t cuda_block_order = 0;        // CUDA emulator: blocks forward (0), reversed (1), shuffled (2)
  uint64_t cuda_shuffle_seed = 0;      // CUDA emulator: the shuffle's seed

  const TensorRef& tensor(int index) const { return tensors[index]; }
  int64_t size(int index, int axis) const { return tensors[index].shape[axis]; }
  template <typename T>
  T* data(int index) const {
    return tensors[index].present ? static_cast<T*>(tensors[index].data) : nullptr;
  }
  int64_t attr(int index) const { return attrs[index]; }
  // field = the tensor's data typed as the field (nullptr when left out); the
  // generated <op>_params builders (build/gen/fastspec/params/) read with these.
  template <typename T>
  void read(int index, T*& field) const {
    field = data<T>(index);
  }
  template <typename T>
  void read_attr(int index, T& field) const {
    field = static_cast<T>(attr(index));
  }
  XpuGrid xpu() const {
    XpuGrid grid = xpu_grid;
    grid.stream = stream;
    return grid;
  }
};

// A launcher returns kOk or an error code of its backend (a cudaError_t value on CUDA).
using Launcher = int (*)(const OpCall&);

// Status of run(): kOk, the launcher's error, or kNoKernel.
constexpr int kNoKernel = -2;

// Runs `op` on call.backend; kNoKernel when no launcher is registered there.
int run(const char* op, const OpCall& call);

// The backends with a launcher for `op`, e.g. "cpu, cuda" (for error messages).
const char* backends_of(const char* op);

// Registration: one static Registrar per op and backend (FASTSPEC_REGISTER_OP).
struct Registrar {
  Registrar(const char* op, Backend backend, Launcher launcher);
};

}  // namespace fastspec

#define FASTSPEC_CONCAT_(a, b) a##b
#define FASTSPEC_CONCAT(a, b) FASTSPEC_CONCAT_(a, b)
// FASTSPEC_REGISTER(ngram_match, kCuda, launcher): `launcher` runs op ngram_match on CUDA.
#define FASTSPEC_REGISTER(op, backend, launcher)                                            \
  static const ::fastspec::Registrar FASTSPEC_CONCAT(registrar_##op##_##backend, __LINE__)( \
      #op, ::fastspec::Backend::backend, launcher)

// FASTSPEC_REGISTER_OP(ngram_match, build): op ngram_match runs on every backend
// compiled in, through the launchers named after it, given build(call):
//   ngram_match_cpu(params), ngram_match_xpu(params, XpuGrid),
//   ngram_match_cuda_emulated(params, stream) on the CUDA emulation, and with CUDA
//   ngram_match_cuda(params, cudaStream_t) (its cudaError_t becomes the status).
// The glue file includes custom_ops/cuda/emulation/launchers.h, which defines
// FASTSPEC_REGISTER_CUDA_EMULATED_.
#define FASTSPEC_REGISTER_OP(op, build)                                                                 \
  FASTSPEC_REGISTER(op, kCpu, [](const ::fastspec::OpCall& c) { return op##_cpu(build(c)); });          \
  FASTSPEC_REGISTER(op, kXpu, [](const ::fastspec::OpCall& c) { return op##_xpu(build(c), c.xpu()); }); \
  FASTSPEC_REGISTER_CUDA_EMULATED_(op, build);                                                          \
  FASTSPEC_REGISTER_CUDA_(op, build)

#if defined(FASTSPEC_WITH_CUDA)
#define FASTSPEC_REGISTER_CUDA_(op, build)                                             \
  FASTSPEC_REGISTER(op, kCuda, [](const ::fastspec::OpCall& c) {                       \
    return static_cast<int>(op##_cuda(build(c), static_cast<cudaStream_t>(c.stream))); \
  })
#else
#define FASTSPEC_REGISTER_CUDA_(op, build) static_assert(true, "no CUDA in this build")
#endif

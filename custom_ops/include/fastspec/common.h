// Framework-free basics shared by every backend: the host/device qualifier,
// status codes and the slot kinds of docs/ops/conventions.md.
#pragma once

#include <cstdint>

// Every compile unit of a CUDA build defines FASTSPEC_WITH_CUDA; the headers
// then also declare the CUDA launchers (raw pointers, a stream, cudaError_t).
// The .cu files compiled for the host emulation (FASTSPEC_CUDA_EMULATION) see
// the emulation's CUDA types instead (custom_ops/cuda/emulation/cuda_emu.h).
#if defined(FASTSPEC_CUDA_EMULATION)
#include "emulation/cuda_emu.h"
#elif defined(FASTSPEC_WITH_CUDA)
#include <cuda_runtime_api.h>
#endif

// FS_HD marks the rules and arithmetic every backend shares. The same headers
// compile for the host (CPU kernels, the XPU emulation), for CUDA devices and,
// under the Kunlunxin XTDK (FASTSPEC_XTDK), for the 32-bit XPU: on that path
// they use no unsigned __int128, no std:: facility and nothing whose result
// depends on the width of long, size_t or a pointer.
#if defined(__CUDACC__)
#define FS_HD __host__ __device__ __forceinline__
#elif defined(FASTSPEC_XTDK)
#define FS_HD inline __device__
#else
#define FS_HD inline
#endif

// FASTSPEC_LAUNCHERS(op, Params); in the op's header declares its launcher on every backend,
// the ones FASTSPEC_REGISTER_OP registers (op_call.h): int op_cpu(const Params&),
// int op_xpu(const Params&, const XpuGrid&) and, in a CUDA build, cudaError_t
// op_cuda(const Params&, cudaStream_t). A new backend adds its launcher here, once.
#if defined(FASTSPEC_WITH_CUDA)
#define FASTSPEC_CUDA_LAUNCHER_(op, Params) cudaError_t op##_cuda(const Params& params, cudaStream_t stream)
#else
#define FASTSPEC_CUDA_LAUNCHER_(op, Params) static_assert(true, "no CUDA in this build")
#endif
#define FASTSPEC_LAUNCHERS(op, Params)                     \
  int op##_cpu(const Params& params);                      \
  int op##_xpu(const Params& params, const XpuGrid& grid); \
  FASTSPEC_CUDA_LAUNCHER_(op, Params)

namespace fastspec {

// Returned by every launcher (CPU, CUDA, XPU). CUDA launchers return the
// cudaError_t value of the launch when it is not cudaSuccess, XPU launchers
// the runtime's status of the launch.
enum Status : int {
  kOk = 0,
  kInvalidArgument = -1,  // a host-side size the kernels cannot handle
  kXpuEmulationError = -3,  // the XPU emulation caught a kernel breaking the XPU's rules
  kCudaEmulationError = -4,  // the CUDA emulation caught a kernel breaking CUDA's rules
};

// How an XPU launch is shaped: clusters x cores (XPU3: at most 12 x 64), and
// for the emulation only, whether its clusters run last to first (a test mode
// that exposes kernels whose clusters depend on one another).
struct XpuGrid {
  int32_t clusters = 12;
  int32_t cores = 64;
  bool reverse_clusters = false;
  void* stream = nullptr;  // XPUStream under XTDK; unused by the emulation
};

// The emulated XPU (custom_ops/xpu/emulation): the rule its last launch broke
// ("" when none), and a kernel per broken rule for the emulation's own tests
// (out[global core] = what that core saw; see emulation/probes.xpu).
const char* xpu_emulation_error();
int xpu_probe(int which, const int* in, int* out, int n, const XpuGrid& grid);

// The emulated CUDA device (custom_ops/cuda/emulation): the rule its last op
// call broke ("" when none).
const char* cuda_emulation_error();

// Slot kinds (docs/ops/conventions.md "A request's tokens and rows").
FS_HD bool is_prefill(int32_t seq_len_encoder) { return seq_len_encoder > 0; }
FS_HD bool is_decode(int32_t seq_len_encoder, int32_t seq_len_decoder) {
  return seq_len_encoder == 0 && seq_len_decoder > 0;
}

// Largest batch a CUDA launcher accepts (the ngram budget pass keeps three
// int32 per slot in 48 KiB of shared memory); larger batches get
// cudaErrorInvalidValue, and a clear error from the Python API first.
constexpr int64_t kMaxCudaBatch = 4096;

FS_HD int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
FS_HD int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

// a - b, saturated to the int64 range instead of wrapping (undefined behaviour).
// The rules compare such differences with small counts, so a saturated value
// decides exactly as the mathematical one does (the rules of docs/ops/ hold for every
// int64 input, as in the reference's unbounded integers).
FS_HD int64_t sub_sat64(int64_t a, int64_t b) {
  const int64_t lo = static_cast<int64_t>(~(~uint64_t{0} >> 1));  // INT64_MIN
  const int64_t hi = static_cast<int64_t>(~uint64_t{0} >> 1);     // INT64_MAX
  if (b > 0 && a < lo + b) return lo;
  if (b < 0 && a > hi + b) return hi;
  return a - b;
}

// a + b, saturated as sub_sat64.
FS_HD int64_t add_sat64(int64_t a, int64_t b) {
  const int64_t lo = static_cast<int64_t>(~(~uint64_t{0} >> 1));  // INT64_MIN
  const int64_t hi = static_cast<int64_t>(~uint64_t{0} >> 1);     // INT64_MAX
  if (b > 0 && a > hi - b) return hi;
  if (b < 0 && a < lo - b) return lo;
  return a + b;
}

// The high 64 bits of a * b, from 32-bit pieces (no unsigned __int128: the
// XPU is a 32-bit device). The CPU runs this same code, so the CPU tests
// check the arithmetic the XPU kernels use.
FS_HD uint64_t mul_hi64(uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(a, b);
#else
  const uint64_t a_lo = a & 0xffffffffu, a_hi = a >> 32;
  const uint64_t b_lo = b & 0xffffffffu, b_hi = b >> 32;
  const uint64_t lo_lo = a_lo * b_lo;
  const uint64_t hi_lo = a_hi * b_lo;
  const uint64_t lo_hi = a_lo * b_hi;
  const uint64_t cross = (lo_lo >> 32) + (hi_lo & 0xffffffffu) + lo_hi;  // < 3 * 2^32: no overflow
  return a_hi * b_hi + (hi_lo >> 32) + (cross >> 32);
#endif
}

}  // namespace fastspec

// The CUDA launchers of custom_ops/cuda/*.cu compiled for the host emulation
// (their names get an _emulated suffix there, cuda_emu.h), for the glue's
// backend Backend::kCudaEmulator, and cuda_emulated(), which runs one op call
// on them: the call's tensors are the only global memory its launches may touch.
#pragma once

#include <cstdint>

#include "cuda_emu_types.h"
#include "fastspec/op_call.h"
#include "fastspec/ops.h"
#include "session.h"

namespace fastspec {

#define FASTSPEC_DECLARE_CUDA_EMULATED_(op, Params) \
  cuda_emu::Error op##_cuda_emulated(const Params& params, cuda_emu::Stream stream);
FASTSPEC_OPS(FASTSPEC_DECLARE_CUDA_EMULATED_)
#undef FASTSPEC_DECLARE_CUDA_EMULATED_
cuda_emu::Error rand64_cuda_emulated(const int64_t* seeds, const int64_t* positions, uint32_t stream_id, uint64_t* out,
                                     int64_t n, cuda_emu::Stream stream);
// The emulation's probe kernels (emulation/probes.cu): kernel `which` on 2 x 64 threads at most.
cuda_emu::Error cuda_probe_emulated(int which, const int* in, int n, int* out, int n_out);

// The session of an op call: its present tensors' bytes and the block order it asks for.
cuda_emu::Session cuda_emulation_session(const OpCall& call);

// A launcher's status as a backend status: kOk, kCudaEmulationError (a broken
// rule, cuda_emulation_error() names it) or the CUDA error code.
int cuda_emulation_status(cuda_emu::Error error);

// Runs `launch()` (a call of one emulated launcher) on `call`'s tensors.
template <typename F>
int cuda_emulated(const OpCall& call, F launch) {
  return cuda_emulation_status(cuda_emu::run_session(cuda_emulation_session(call), launch));
}

}  // namespace fastspec

// FASTSPEC_REGISTER_OP's line for the emulated CUDA device (fastspec/op_call.h).
#define FASTSPEC_REGISTER_CUDA_EMULATED_(op, build)                                             \
  FASTSPEC_REGISTER(op, kCudaEmulator, [](const ::fastspec::OpCall& c) {                        \
    return ::fastspec::cuda_emulated(c, [&] { return op##_cuda_emulated(build(c), nullptr); }); \
  })

// An op call as an emulation session (launchers.h), and the emulation's
// status and error text for the bindings (common.h).
#include "launchers.h"

namespace fastspec {

cuda_emu::Session cuda_emulation_session(const OpCall& call) {
  static constexpr int kBytes[] = {1, 4, 8, 4, 2, 2};  // op_call.h DType
  cuda_emu::Session session;
  for (int i = 0; i < call.num_tensors; ++i) {
    const TensorRef& t = call.tensor(i);
    if (!t.present || t.data == nullptr || t.dtype < 0 || t.dtype > kBFloat16) continue;
    int64_t bytes = kBytes[t.dtype];
    for (int a = 0; a < t.rank; ++a) bytes *= t.shape[a];
    const auto begin = reinterpret_cast<uintptr_t>(t.data);
    session.arrays.push_back({begin, begin + static_cast<uintptr_t>(bytes)});
  }
  session.order = static_cast<cuda_emu::BlockOrder>(call.cuda_block_order);
  session.seed = call.cuda_shuffle_seed;
  return session;
}

int cuda_emulation_status(cuda_emu::Error error) {
  if (error == cuda_emu::cudaSuccess) return kOk;
  return error == cuda_emu::cudaErrorLaunchFailure ? kCudaEmulationError : static_cast<int>(error);
}

}  // namespace fastspec

const char* fastspec::cuda_emulation_error() { return cuda_emu::last_error(); }

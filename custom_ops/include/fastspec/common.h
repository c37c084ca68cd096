// Framework-free basics shared by every backend: the host/device qualifier,
// status codes and the slot-kind rules of SPEC.md.
#pragma once

#include <cstdint>

// Every compile unit of a CUDA build defines FASTSPEC_WITH_CUDA; the headers
// then also declare the CUDA launchers (raw pointers, a stream, cudaError_t).
#if defined(FASTSPEC_WITH_CUDA)
#include <cuda_runtime_api.h>
#endif

#if defined(__CUDACC__)
#define FS_HD __host__ __device__ __forceinline__
#else
#define FS_HD inline
#endif

namespace fastspec {

// Returned by every launcher (CPU and CUDA). CUDA launchers return the
// cudaError_t value of the launch when it is not cudaSuccess.
enum Status : int {
  kOk = 0,
  kInvalidArgument = -1,  // a host-side size the kernels cannot handle
};

// Slot kinds (SPEC.md "Conventions").
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

}  // namespace fastspec

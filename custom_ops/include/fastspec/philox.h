// Philox4x32-10 and the rand64 stream of docs/ops/conventions.md, one implementation for
// host and device. Stateless: every number is a pure function of
// (seed, position, stream), so results are batch-invariant and a captured
// CUDA Graph replays with seeds and positions read from device tensors.
#pragma once

#include <cstdint>

#include "fastspec/common.h"

namespace fastspec {

// Streams keep the draws of different decisions independent.
enum RandStream : uint32_t {
  kStreamTarget = 1,
  kStreamTopp = 2,
  kStreamAccept = 3,
  kStreamResample = 4,
  kStreamDraft = 5,
  kStreamBlock = 6,  // BLOCK's coins: position = the step's step_idx, index = the prefix length
};

struct Philox4 {
  uint32_t x[4];
};

FS_HD void mul_hi_lo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  const uint64_t p = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(p >> 32);
  *lo = static_cast<uint32_t>(p);
}

// Philox4x32 with 10 rounds and the Random123 constants.
FS_HD Philox4 philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    mul_hi_lo(0xD2511F53u, c0, &hi0, &lo0);
    mul_hi_lo(0xCD9E8D57u, c2, &hi1, &lo1);
    const uint32_t n0 = hi1 ^ c1 ^ k0;
    const uint32_t n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return Philox4{{c0, c1, c2, c3}};
}

// rand64(seed, position, stream, index): key (seed lo, seed hi), counter
// (position lo, position hi, stream, index); result x0 | x1 << 32. Only
// kStreamBlock uses an index other than 0.
FS_HD uint64_t rand64(int64_t seed, int64_t position, uint32_t stream, uint32_t index = 0) {
  const uint64_t s = static_cast<uint64_t>(seed);
  const uint64_t p = static_cast<uint64_t>(position);
  const Philox4 r = philox4x32_10(static_cast<uint32_t>(p), static_cast<uint32_t>(p >> 32), stream, index,
                                  static_cast<uint32_t>(s), static_cast<uint32_t>(s >> 32));
  return static_cast<uint64_t>(r.x[0]) | (static_cast<uint64_t>(r.x[1]) << 32);
}

// floor(r * total / 2^64): a uniform index into [0, total) for total >= 0.
FS_HD uint64_t scale_rand64(uint64_t r, uint64_t total) { return mul_hi64(r, total); }

}  // namespace fastspec

#if defined(FASTSPEC_WITH_CUDA)
namespace fastspec {
// out[i] = rand64(seeds[i], positions[i], stream_id) for i < n (tests).
cudaError_t rand64_cuda(const int64_t* seeds, const int64_t* positions, uint32_t stream_id, uint64_t* out, int64_t n,
                        cudaStream_t stream);
}  // namespace fastspec
#endif

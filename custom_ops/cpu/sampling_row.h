// What every CPU sampling pass shares (custom_ops/cpu/sampling.cc is the only
// includer): a row's keys, the scratch of one thread, the exact masses in
// double, the gather above a bound. docs/ops/sampling.md gives the contract.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "fastspec/sampling.h"

namespace fastspec {
namespace {

constexpr int kTopShift = 20;  // key >> 20: the top 11 of the key's 31 bits

// Scratch of one thread (heap, reused across rows and calls).
struct Scratch {
  int64_t count[2][kRadixBuckets];  // two copies: consecutive entries rarely share a chain
  int64_t mass[2][kRadixBuckets];
  int64_t hcount[2][kRadixBuckets];  // two copies again, merged after the pass
  int64_t hmass[2][kRadixBuckets];
  int64_t hlast[kRadixBuckets];
  std::vector<uint64_t> gathered;   // combined keys at or above the bound, ids ascending
  std::vector<uint64_t> work;       // radix compaction
  std::vector<int64_t> block_mass;  // flat path: mass per kDrawBlock ids above the straddling bucket
  uint32_t chunk_max[8192];         // kMaxChunks
};

template <typename Tag>
struct Row {
  const typename Tag::T* p;
  int64_t vocab;
  int id_bits;
  uint32_t key(int64_t i) const { return key_of(Tag{}, p, i); }
};

struct RowTotals {
  int64_t n_valid;
  int64_t mass;
  uint32_t min_key = 0;  // smallest valid key (totals_and_bound only; 0 without one)
};

// floor(min(p, 1) * 2^40) for a key (0 for key 0): exact in double.
inline int64_t mass_fast(uint32_t key) {
  return static_cast<int64_t>(static_cast<double>(f32_from_bits(std::min(key, 0x3f800000u))) * 1099511627776.0);
}

constexpr int64_t kDrawBlock = 512;  // near-flat rows: ids per block of the draw (a multiple of 16)

// A gather above a bound in progress: the combined keys it took into
// s.gathered (ids ascending) and their mass. The SIMD versions hand it the
// lanes at or above the bound, and the tail they leave.
template <typename Tag>
struct Gather {
  const Row<Tag>& row;
  uint64_t* out;
  int64_t n = 0, mass = 0;

  Gather(const Row<Tag>& r, Scratch& s) : row(r) {
    if (static_cast<int64_t>(s.gathered.size()) < row.vocab) s.gathered.resize(row.vocab);
    out = s.gathered.data();
  }
  void take(int64_t i, uint32_t k) {
    out[n++] = combined_key(k, i, row.vocab, row.id_bits);
    mass += mass_of_bits(k);
  }
  void lanes(int64_t i, uint32_t hits) {  // bit j set: entry i + j is taken
    while (hits) {
      const int lane = __builtin_ctz(hits);
      hits &= hits - 1;
      take(i + lane, row.key(i + lane));
    }
  }
  // Entries [begin, V) with key >= tau, one at a time; returns the count, *mass_out their mass.
  int64_t rest(int64_t begin, uint32_t tau, int64_t* mass_out) {
    for (int64_t i = begin; i < row.vocab; ++i) {
      const uint32_t k = row.key(i);
      if (k >= tau) take(i, k);
    }
    *mass_out = mass;
    return n;
  }
};

// The near-flat passes' buffers: the gathered bucket and the mass per kDrawBlock ids.
void flat_prepare(int64_t vocab, Scratch& s) {
  if (static_cast<int64_t>(s.gathered.size()) < vocab) s.gathered.resize(vocab);
  const int64_t blocks = (vocab + kDrawBlock - 1) / kDrawBlock;
  if (static_cast<int64_t>(s.block_mass.size()) < blocks) s.block_mass.resize(blocks);
}

}  // namespace
}  // namespace fastspec

// The near-flat path of the CPU sampling kernels: S's cut, and the draw from
// S, for a row whose S reaches below every chunk maximum. Included by
// sampling.cc only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>

#include "sampling_passes.h"
#include "sampling_row.h"
#include "sampling_select.h"

namespace fastspec {
namespace {

// When S reaches below every chunk maximum (a near-flat row, where S is most
// of the row), the level-0 histogram (key >> 20) holds nearly the whole row in
// one or two buckets and the gathers copy the whole row. Instead: a mass
// histogram over the row's own key range [min valid key, max key] in 2048
// buckets of 2^shift keys, walked from the bottom: the cut lies in the first
// bucket at which the mass from the bottom exceeds total - thr (the mass S
// leaves out, small here), so only the buckets up to there are needed (see
// sampling_avx512.h flat_cut_bucket_avx512). One pass gathers that bucket's
// members (an exact select among them finds the cut) and sums, per block of
// kDrawBlock ids, the mass above the bucket; the draw then scans a single
// block. Every decision is still on the exact masses; the shortcuts only
// change the time.

constexpr int64_t kFlatSortDirectly = 2048;  // straddling buckets up to this size are sorted

// radix_select(keys, n, ..., 0, target, by mass) for a small list: sort a copy.
SelectResult select_by_mass(const uint64_t* keys, int64_t n, int id_bits, int64_t target, Scratch& s) {
  if (n > kFlatSortDirectly) return radix_select(keys, n, id_bits, 0, target, true, s);
  if (static_cast<int64_t>(s.work.size()) < n) s.work.resize(n);
  uint64_t* w = s.work.data();
  std::copy(keys, keys + n, w);
  std::sort(w, w + n, std::greater<uint64_t>());
  int64_t cum = 0;
  for (int64_t j = 0; j < n; ++j) {
    cum += mass_of_bits(cut_bits(w[j], id_bits));
    if (cum >= target) return {w[j], cum};
  }
  return {w[n - 1], cum};  // unreachable: target <= the list's mass
}

// Where a near-flat row's set S lies after flat_select: the gathered members
// of the bucket that straddles the cut, [blo, btop), and every key >= btop
// (their mass per kDrawBlock ids in s.block_mass).
struct FlatBucket {
  uint32_t blo, btop;
  int64_t n;  // bucket keys gathered (ids ascending)
};

// S's cut and mass for a by-mass row (top-p threshold 1 <= thr <= total over
// every valid entry, keys in [lo, max_key]); with `draw`, the block masses
// flat_draw needs.
template <typename Tag>
SelectResult flat_select(const Row<Tag>& row, uint32_t lo, uint32_t max_key, int64_t total, int64_t thr, bool draw,
                         Scratch& s, FlatBucket* bucket) {
  int shift = 0;
  while (((max_key - lo) >> shift) >= static_cast<uint32_t>(kRadixBuckets)) ++shift;
  int64_t* hist = s.mass[0];
  int64_t below = 0;
  // The cut from the bottom: S leaves out less than total - thr + 1.
  const int d = flat_cut_bucket(row, lo, max_key, shift, total - thr, total, hist, &below);
  const int64_t above = total - below - hist[d];  // mass of the buckets above d
  bucket->blo = lo + (static_cast<uint32_t>(d) << shift);
  bucket->btop = lo + (static_cast<uint32_t>(d + 1) << shift);  // max key < 2^31: no overflow
  bucket->n = flat_bucket_pass(row, bucket->blo, bucket->btop, max_key, draw, s);
  // 1 <= thr - above <= hist[d], the mass of the gathered bucket.
  const SelectResult r = select_by_mass(s.gathered.data(), bucket->n, row.id_bits, thr - above, s);
  return {r.cut, above + r.mass_upto};
}

// The token a draw point (< S's mass) lands on, S as flat_select left it:
// the block masses tell the one block of ids to scan.
template <typename Tag>
int64_t flat_draw(const Row<Tag>& row, const FlatBucket& bucket, uint64_t cut, uint64_t point, Scratch& s) {
  const uint64_t* keys = s.gathered.data();
  int64_t* block = s.block_mass.data();
  for (int64_t j = 0; j < bucket.n; ++j) {  // the bucket's members of S join their blocks
    if (keys[j] >= cut) {
      block[cut_id(keys[j], row.vocab, row.id_bits) / kDrawBlock] += mass_of_bits(cut_bits(keys[j], row.id_bits));
    }
  }
  uint64_t cum = 0;
  for (int64_t begin = 0, b = 0; begin < row.vocab; begin += kDrawBlock, ++b) {
    if (cum + static_cast<uint64_t>(block[b]) <= point) {
      cum += static_cast<uint64_t>(block[b]);
      continue;
    }
    const int64_t end = std::min(row.vocab, begin + kDrawBlock);
    for (int64_t i = begin; i < end; ++i) {  // ids ascending within the block
      const uint32_t k = row.key(i);
      if (k >= bucket.blo && combined_key(k, i, row.vocab, row.id_bits) >= cut) {
        cum += static_cast<uint64_t>(mass_of_bits(k));
        if (cum > point) return i;
      }
    }
    break;  // unreachable: the block's mass exceeds the point
  }
  return -1;
}

}  // namespace
}  // namespace fastspec

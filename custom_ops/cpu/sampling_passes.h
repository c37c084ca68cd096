// The CPU sampling kernels' row passes in the widest version this CPU and
// FASTSPEC_SIMD allow (simd.h with_simd_level, chosen per row); a pass with no
// version at a level runs the next narrower one. All give the same results.
#pragma once

#include <cstdint>

#include "sampling_avx2.h"
#include "sampling_avx512.h"
#include "sampling_row.h"
#include "sampling_scalar.h"
#include "simd.h"

namespace fastspec {
namespace {

template <typename Tag>
RowTotals totals_and_bound(const Row<Tag>& row, int64_t chunks, uint32_t* maxima) {
  return with_simd_level([&](auto level) { return totals_and_bound(level, row, chunks, maxima); });
}

template <typename Tag>
int64_t gather_above(const Row<Tag>& row, uint32_t tau, Scratch& s, int64_t* mass) {
  return with_simd_level([&](auto level) { return gather_above(level, row, tau, s, mass); });
}

template <typename Tag>
bool gather_hopeless(const Row<Tag>& row, uint32_t tau, int64_t thr, int64_t total) {
  return with_simd_level([&](auto level) { return gather_hopeless(level, row, tau, thr, total); });
}

template <typename Tag>
int flat_cut_bucket(const Row<Tag>& row, uint32_t lo, uint32_t max_key, int shift, int64_t excl, int64_t total,
                    int64_t* hist, int64_t* below) {
  return with_simd_level(
      [&](auto level) { return flat_cut_bucket(level, row, lo, max_key, shift, excl, total, hist, below); });
}

template <typename Tag>
int64_t flat_bucket_pass(const Row<Tag>& row, uint32_t blo, uint32_t btop, uint32_t max_key, bool block_masses,
                         Scratch& s) {
  return with_simd_level([&](auto level) { return flat_bucket_pass(level, row, blo, btop, max_key, block_masses, s); });
}

template <typename Tag>
void write_kept(const Row<Tag>& row, uint64_t cut, int64_t set_mass, float* out) {
  with_simd_level([&](auto level) { write_kept(level, row, cut, set_mass, out); });
}

}  // namespace
}  // namespace fastspec

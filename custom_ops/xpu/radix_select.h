// The row machinery of top_p_candidates.xpu and sample_tokens.xpu: a cluster
// works on one row of probabilities; its cores stream the row through LM in
// tiles (core c takes tiles c, c + cores, ...) and meet in shared memory.
//
// radix_select finds the same cut as the CPU and CUDA kernels (sampling.h:
// the cut is defined by the contract, not by how it is found), with 8-bit
// digits so that every core's histogram of a level fits its LM (256 buckets:
// counts, masses, the last id seen: 4 KB). Each level the cores merge their
// histograms into shared memory with atomic adds, core 0 walks the buckets
// from the top to the one where the weight reaches the target, and every core
// reads the choice back. A bucket that ends up holding one element is that
// element: the core that saw it left its id in `last` (with one element there
// is exactly one writer).
#pragma once

#include "fastspec/sampling.h"
#include "xpu_kernel.h"

namespace fastspec {
namespace xpu {

constexpr int kDigitBits = 8;
constexpr int kBuckets = 1 << kDigitBits;
constexpr int kProbTile = 128;  // probabilities per copy: 512 B of f32

struct SelectShared {
  unsigned int count[kBuckets];
  unsigned long long mass[kBuckets];
  int last[kBuckets];
  long long partial_count[kMaxCores], partial_mass[kMaxCores];
  int chosen;
  long long chosen_above_weight, chosen_above_mass;
};

struct SelectLocal {  // one core's histogram of a level and its probability tile
  unsigned int count[kBuckets];
  unsigned long long mass[kBuckets];
  int last[kBuckets];
  unsigned char tile[kProbTile * 4];
};
static_assert(sizeof(SelectLocal) <= kLocalBufferBudget, "radix_select: local memory budget");

// One row of probabilities in global memory.
struct ProbRow {
  const unsigned char __global_ptr__* data;
  int32_t dtype;  // ProbDtype
  int64_t vocab;
  int id_bits;

  __device__ int bytes() const { return prob_bytes(dtype); }
  // Elements [v0, v0 + n) into the LM tile (n <= kProbTile).
  __device__ void load(int64_t v0, int n, unsigned char* tile) const { GM2LM(data + v0 * bytes(), tile, n * bytes()); }
  // The order key (sampling.h prob_key) of element j of a loaded tile.
  __device__ uint32_t key(const unsigned char* tile, int j) const {
    return prob_key(prob_bits_at(tile + j * bytes(), dtype));
  }
  __device__ uint64_t combined(uint32_t k, int64_t v) const { return combined_key(k, v, vocab, id_bits); }
  __device__ uint64_t combined_at(int64_t v) const {
    unsigned char tile[4];
    load(v, 1, tile);
    return combined(key(tile, 0), v);
  }
};

// The tiles of a row that this core streams through LM (tiles me, me + cores,
// ...): `for (OwnTiles t(row, tile); t.next();)` loads each into `tile` in
// turn, t.count elements from id t.first.
struct OwnTiles {
  const ProbRow& row;
  unsigned char* tile;
  int64_t first;
  int count;

  __device__ OwnTiles(const ProbRow& r, unsigned char* t)
      : row(r), tile(t), first(static_cast<int64_t>(core_id() - core_num()) * kProbTile), count(0) {}
  __device__ bool next() {
    first += static_cast<int64_t>(core_num()) * kProbTile;
    if (first >= row.vocab) return false;
    count = static_cast<int>(min64(kProbTile, row.vocab - first));
    row.load(first, count, tile);
    return true;
  }
};

// The row's largest key, on every core of the cluster: what min_p's cut is relative to.
static inline __device__ uint32_t row_max_key(const ProbRow& row, _shared_ptr_ SelectShared* sm) {
  const int me = core_id(), cores = core_num();
  unsigned char tile[kProbTile * 4];
  uint32_t largest = 0;
  for (OwnTiles tiles(row, tile); tiles.next();) {
    for (int j = 0; j < tiles.count; ++j) {
      const uint32_t k = row.key(tile, j);
      largest = k > largest ? k : largest;
    }
  }
  sm->partial_count[me] = largest;
  mfence_sm();
  sync_all();
  uint32_t all = 0;
  for (int c = 0; c < cores; ++c) {
    const uint32_t k = static_cast<uint32_t>(sm->partial_count[c]);
    all = k > all ? k : all;
  }
  sync_all();  // every core has read the partials before they are written again
  return all;
}

// min_p's floor of a row (sampling.h minp_floor), on every core: 1, every valid key, when min_p cannot cut.
static inline __device__ uint32_t row_minp_floor(const ProbRow& row, float min_p, _shared_ptr_ SelectShared* sm) {
  return minp_active(min_p) ? minp_floor(row_max_key(row, sm), min_p) : 1u;
}

// Number of entries with key >= floor (the valid ones min_p keeps) and their total mass, on every core.
static inline __device__ void row_totals(const ProbRow& row, uint32_t floor, _shared_ptr_ SelectShared* sm,
                                         int64_t* n_valid, int64_t* total_mass) {
  const int me = core_id(), cores = core_num();
  unsigned char tile[kProbTile * 4];
  long long n = 0, mass = 0;
  for (OwnTiles tiles(row, tile); tiles.next();) {
    for (int j = 0; j < tiles.count; ++j) {
      const uint32_t k = row.key(tile, j);
      n += k >= floor;
      mass += k >= floor ? mass_of_bits(k) : 0;
    }
  }
  sm->partial_count[me] = n;
  sm->partial_mass[me] = mass;
  mfence_sm();
  sync_all();
  long long n_all = 0, mass_all = 0;
  for (int c = 0; c < cores; ++c) {
    n_all += sm->partial_count[c];
    mass_all += sm->partial_mass[c];
  }
  sync_all();  // every core has read the partials before they are written again
  *n_valid = n_all;
  *total_mass = mass_all;
}

// The cut of the set {combined >= lower} where the cumulative weight (count,
// or mass when by_mass) in probability order first reaches target
// (1 <= target <= the set's weight): sampling.h's contract, on every core.
static inline __device__ SelectResult radix_select(const ProbRow& row, uint64_t lower, int64_t target, bool by_mass,
                                                   _shared_ptr_ SelectShared* sm) {
  const int me = core_id(), cores = core_num();
  unsigned int count[kBuckets];
  unsigned long long mass[kBuckets];
  int last[kBuckets];
  unsigned char tile[kProbTile * 4];
  const int width = combined_width(row.id_bits);
  uint64_t prefix = 0;
  int done = 0;
  long long above_weight = 0, above_mass = 0;
  for (;;) {
    const RadixLevel level = radix_level(width, done, kDigitBits);
    const uint64_t want_high = prefix >> level.high;  // high <= 62
    for (int d = me; d < kBuckets; d += cores) {
      sm->count[d] = 0;
      sm->mass[d] = 0;
      sm->last[d] = -1;
    }
    for (int d = 0; d < kBuckets; ++d) {
      count[d] = 0;
      mass[d] = 0;
    }
    for (OwnTiles tiles(row, tile); tiles.next();) {
      for (int j = 0; j < tiles.count; ++j) {
        const uint32_t k = row.key(tile, j);
        const uint64_t c = row.combined(k, tiles.first + j);
        if (c < lower || (c >> level.high) != want_high) continue;
        const int d = static_cast<int>(level.digit(c));
        count[d] += 1;
        mass[d] += static_cast<unsigned long long>(mass_of_bits(k));
        last[d] = static_cast<int>(tiles.first + j);
      }
    }
    mfence_sm();
    sync_all();  // shared histogram zeroed by every core
    for (int d = 0; d < kBuckets; ++d) {
      if (count[d] == 0) continue;
      atomicadd(&sm->count[d], count[d]);
      if (mass[d] != 0) atomicadd(&sm->mass[d], mass[d]);
      sm->last[d] = last[d];  // read only when the bucket holds one element: one writer
    }
    mfence_sm();
    sync_all();
    if (me == 0) {  // the bucket where the weight from the top first reaches the target
      const long long need = target - above_weight;  // >= 1
      long long weight_above = 0, mass_above = 0;
      sm->chosen = 0;
      sm->chosen_above_weight = 0;
      sm->chosen_above_mass = 0;
      for (int d = kBuckets - 1; d >= 0; --d) {
        const long long w = by_mass ? static_cast<long long>(sm->mass[d]) : static_cast<long long>(sm->count[d]);
        if (weight_above + w >= need) {
          sm->chosen = d;
          sm->chosen_above_weight = weight_above;
          sm->chosen_above_mass = mass_above;
          break;
        }
        weight_above += w;
        mass_above += static_cast<long long>(sm->mass[d]);
      }
      mfence_sm();
    }
    sync_all();
    const int d = sm->chosen;
    above_weight += sm->chosen_above_weight;
    above_mass += sm->chosen_above_mass;
    const unsigned int chosen_count = sm->count[d];
    const int chosen_last = sm->last[d];
    sync_all();  // every core has read the level before the next one clears it
    prefix |= static_cast<uint64_t>(d) << level.shift;
    done += level.digits;
    if (chosen_count == 1 || level.shift == 0) {
      const uint64_t cut = chosen_count == 1 ? row.combined_at(chosen_last) : prefix;
      return {cut, above_mass + mass_of_bits(cut_bits(cut, row.id_bits))};
    }
  }
}

// radix_select as sampling.h's sample_set calls it: the set S of a row with a
// valid entry comes from `sample_set(top_k, top_p, ..., select)` on every core.
struct RowSelect {
  ProbRow row;
  _shared_ptr_ SelectShared* sm;
  __device__ SelectResult operator()(uint64_t lower, int64_t target, bool by_mass) const {
    return radix_select(row, lower, target, by_mass, sm);
  }
};

// Request b's min_p (sampling.h min_p_of): 0, no cut, when the tensor was left out.
static inline __device__ float min_p_at(const float __global_ptr__* min_p, int64_t b) {
  return min_p ? load_scalar(min_p, b) : 0.0f;
}

// The request of output row t (sampling.h row_request), from global memory.
static inline __device__ bool row_request_at(const int __global_ptr__* batch_id_per_token_output, int64_t t,
                                             int64_t batch, int64_t* b) {
  const int32_t id = load_scalar(batch_id_per_token_output, t);
  return row_request(&id, 0, batch, b);
}

}  // namespace xpu
}  // namespace fastspec

// top_p_candidates, sample_tokens and top_k_top_p_probs (docs/ops/sampling.md):
// their params, the integer keys and the set rule every backend shares, and
// the launcher declarations.
#pragma once

#include <cstdint>

#include "fastspec/common.h"
#include "fastspec/mass.h"
#include "fastspec/philox.h"

namespace fastspec {

// Every decision is made on integers:
//   * a probability becomes its f32 bit pattern (fp16/bf16 widened exactly
//     first, by the converters below); a valid probability (finite, > 0) has
//     bits in [1, 0x7f7fffff] and positive floats order like their bits;
//   * an element's rank key is `combined = bits << id_bits | (V - 1 - id)`:
//     larger combined = earlier in probability order (value descending, then
//     id ascending); every invalid entry has bits 0, so its combined key is
//     below 2^id_bits and below every cutoff (a cutoff is a valid element's key);
//   * masses come from the bits by integer shifts (mass_of_bits), equal to
//     the contract's floor(min(p, 1) * 2^40) without any float operation.
// A "cut" C is the combined key of one element; the set it selects is every
// element with combined >= C: a prefix of the probability order.
//
// Both backends find cuts the same way: a radix select over the combined key,
// 11 bits per level from the top, with per-bucket counts and masses, stopping
// early when the chosen bucket holds a single element. The cut itself is
// defined by the contract (it does not depend on how it is found), so the
// backends agree bit for bit whatever their parallel schedule.

enum ProbDtype : int32_t { kProbF32 = 0, kProbF16 = 1, kProbBF16 = 2 };

constexpr int32_t kMaxCandidateLen = 1024;
constexpr int kRadixBits = 11;
constexpr int kRadixBuckets = 1 << kRadixBits;

// ---- exact fp16 / bf16 -> f32 bit patterns (host and device alike) --------

FS_HD uint32_t f32_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  __builtin_memcpy(&u, &f, sizeof(u));  // a builtin: no std:: on the XPU path
  return u;
#endif
}

FS_HD float f32_from_bits(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  __builtin_memcpy(&f, &u, sizeof(f));
  return f;
#endif
}

FS_HD uint32_t bf16_to_f32_bits(uint16_t h) { return static_cast<uint32_t>(h) << 16; }

// IEEE binary16 -> binary32 bits, exact. A subnormal half is mant * 2^-24:
// the int -> float conversion and the power-of-two scaling are both exact and
// the result is a normal float (no flush-to-zero mode can touch it).
FS_HD uint32_t f16_to_f32_bits(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1fu) return sign | 0x7f800000u | (mant << 13);  // inf / NaN
  if (exp != 0) return sign | ((exp + 112u) << 23) | (mant << 13);
  return sign | f32_bits(static_cast<float>(mant) * 5.9604644775390625e-08f);  // 2^-24; 0 stays 0
}

// Bytes of one probability stored as `dtype`.
FS_HD int prob_bytes(int32_t dtype) { return dtype == kProbF32 ? 4 : 2; }

// The f32 bits of the probability stored at `value` as `dtype` (fp16 / bf16
// widened exactly). Read bytewise off the device, so `value` may sit anywhere
// in a byte buffer (the XPU kernels' LM tiles) without breaking alignment or
// aliasing rules.
FS_HD uint32_t prob_bits_at(const void* value, int32_t dtype) {
#if defined(__CUDA_ARCH__)
  if (dtype == kProbF32) return __float_as_uint(*static_cast<const float*>(value));
  const uint16_t half = *static_cast<const uint16_t*>(value);
#else
  if (dtype == kProbF32) {
    uint32_t bits;
    __builtin_memcpy(&bits, value, 4);
    return bits;
  }
  uint16_t half;
  __builtin_memcpy(&half, value, 2);
#endif
  return dtype == kProbF16 ? f16_to_f32_bits(half) : bf16_to_f32_bits(half);
}

// The order key of a probability: its f32 bits when valid, 0 otherwise.
FS_HD uint32_t prob_key(uint32_t f32bits) {
  return (f32bits - 1u) < 0x7f7fffffu ? f32bits : 0u;  // [1, 0x7f7fffff]: finite, > 0
}

struct F32Tag {
  using T = float;
};
struct F16Tag {
  using T = uint16_t;
};
struct BF16Tag {
  using T = uint16_t;
};

FS_HD uint32_t key_of(F32Tag, const float* row, int64_t i) { return prob_key(f32_bits(row[i])); }
FS_HD uint32_t key_of(F16Tag, const uint16_t* row, int64_t i) { return prob_key(f16_to_f32_bits(row[i])); }
FS_HD uint32_t key_of(BF16Tag, const uint16_t* row, int64_t i) { return prob_key(bf16_to_f32_bits(row[i])); }

// floor(min(p, 1) * 2^40) from a valid key (0 for key 0), integers only.
FS_HD int64_t mass_of_bits(uint32_t key) {
  if (key >= 0x3f800000u) return int64_t{1} << 40;  // p >= 1
  const int e = static_cast<int>(key >> 23);
  if (e == 0) return 0;                             // subnormal (or 0): < 2^-126
  const uint64_t mant = (key & 0x7fffffu) | 0x800000u;
  const int s = e - 110;                            // p * 2^40 = mant * 2^(e - 127 - 23 + 40)
  if (s >= 0) return static_cast<int64_t>(mant << s);
  if (s <= -24) return 0;
  return static_cast<int64_t>(mant >> -s);
}

// Number of bits that hold V - 1 - id (at least 1).
FS_HD int id_bits_for(int64_t vocab) {
  int b = 1;
  while ((int64_t{1} << b) < vocab) ++b;
  return b;
}

FS_HD uint64_t combined_key(uint32_t key, int64_t id, int64_t vocab, int id_bits) {
  return (static_cast<uint64_t>(key) << id_bits) | static_cast<uint64_t>(vocab - 1 - id);
}
FS_HD uint32_t cut_bits(uint64_t cut, int id_bits) { return static_cast<uint32_t>(cut >> id_bits); }
FS_HD int64_t cut_id(uint64_t cut, int64_t vocab, int id_bits) {
  return vocab - 1 - static_cast<int64_t>(cut & ((uint64_t{1} << id_bits) - 1));
}

// Width of the combined key (31 value bits + id bits) and the radix levels.
FS_HD int combined_width(int id_bits) { return 31 + id_bits; }

// A level of a radix select over combined keys of `width` bits, `done` of them
// fixed by the buckets chosen before it (the prefix): its digit is the next
// `digit_bits` bits below them, or what is left at the bottom.
struct RadixLevel {
  int shift;      // the digit is bits [shift, high) of a key
  int digits;     // high - shift: 1 << digits buckets
  int high;       // a key's bits from here up must equal the prefix's
  uint64_t mask;  // (1 << digits) - 1

  FS_HD uint32_t digit(uint64_t c) const { return static_cast<uint32_t>((c >> shift) & mask); }
};

FS_HD RadixLevel radix_level(int width, int done, int digit_bits) {
  const int shift = width - done > digit_bits ? width - done - digit_bits : 0;
  const int digits = width - done - shift;
  return {shift, digits, shift + digits, (uint64_t{1} << digits) - 1};
}

// min_p (docs/ops/sampling.md "Rules"): a row keeps the valid entries whose
// mass is at least minp_threshold of its largest entry's mass. Masses grow
// with the key, so the kept entries are those with key >= a floor: the
// smallest key of mass >= thr (1, every valid entry, when thr is 0). Each
// backend finds the row's largest key, then treats keys below the floor as
// invalid. `min_p` may be null (the optional tensor left out): no cut.
FS_HD float min_p_of(const float* min_p, int64_t b) { return min_p ? min_p[b] : 0.0f; }

// Whether min_p can cut anything (its quantum is not 0): only then is the row's maximum needed.
FS_HD bool minp_active(float min_p) { return minp_quantum(min_p) != 0; }

FS_HD uint32_t minp_floor(uint32_t max_key, float min_p) {
  const int64_t thr = minp_threshold(mass_of_bits(max_key), min_p);
  if (thr == 0) return 1u;
  uint32_t lo = 1u, hi = max_key;  // mass_of_bits(max_key) >= thr: the answer is in [lo, hi]
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (mass_of_bits(mid) >= thr) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

// The row-level decisions that follow a select, shared by every backend.

// top_k active for a row with n_valid valid entries?
FS_HD bool topk_limits(int32_t top_k, int64_t vocab, int64_t n_valid) {
  return top_k > 0 && top_k < vocab && static_cast<int64_t>(top_k) < n_valid;
}

// What a radix select finds: the cut (the combined key of the element where
// the cumulative weight reaches the target) and the mass of every element of
// the set from the top down to the cut, inclusive.
struct SelectResult {
  uint64_t cut;
  int64_t mass_upto;
};

// The set S sample_tokens draws a row from (docs/ops/sampling.md "Rules"): S_k =
// the first top_k valid entries in probability order (every valid entry when
// top_k does not limit), S = the shortest prefix of S_k whose mass reaches the
// top-p threshold of S_k's mass, or S_k's first element alone when that mass
// is 0. The rule is written here once: sample_tokens draws from S and
// top_k_top_p_probs renormalises over it, on every backend. `select` is the
// backend's radix select, select(lower, target, by_mass) -> SelectResult, over
// the set {combined >= lower} (1 <= target <= its weight); the first call has
// lower = every entry min_p keeps (keys >= floor), and n_valid, total_mass are
// that set's. Needs n_valid >= 1. Returns S's cut and mass.
template <typename Select>
FS_HD SelectResult sample_set(int32_t top_k, float top_p, int64_t vocab, int64_t n_valid, int64_t total_mass,
                              int id_bits, uint32_t floor, Select& select) {
  uint64_t lower = static_cast<uint64_t>(floor) << id_bits;  // floor >= 1: valid keys only
  int64_t mass_k = total_mass;
  if (topk_limits(top_k, vocab, n_valid)) {
    const SelectResult k = select(lower, static_cast<int64_t>(top_k), false);
    lower = k.cut;
    mass_k = k.mass_upto;
  }
  const int64_t thr = topp_threshold(mass_k, top_p);
  return select(lower, thr > 0 ? thr : 1, thr > 0);  // thr 0 (mass 0): the first element
}

// The value top_k_top_p_probs writes for a member of S with mass `mass`, S of
// mass `set_mass`: float(double(mass) / double(set_mass)), each step rounded
// to nearest (int64 -> double, the IEEE division, double -> float), so every
// backend gets the same bits (the XPU emulates the double division in
// software). A set of mass 0 is a single element: 1.
FS_HD float kept_probability(int64_t mass, int64_t set_mass) {
  if (set_mass == 0) return 1.0f;
  return static_cast<float>(static_cast<double>(mass) / static_cast<double>(set_mass));
}

// Row -> request, and the position of its draw (wrapping 64-bit arithmetic).
FS_HD bool row_request(const int32_t* batch_id_per_token_output, int64_t t, int64_t batch, int64_t* b) {
  const int64_t v = batch_id_per_token_output[t];
  *b = v;
  return v >= 0 && v < batch;
}
FS_HD int64_t row_position(const int64_t* step_idx, const int32_t* cu_seqlens_q_output, int64_t b, int64_t t) {
  return static_cast<int64_t>(static_cast<uint64_t>(step_idx[b]) + static_cast<uint64_t>(t) -
                              static_cast<uint64_t>(static_cast<int64_t>(cu_seqlens_q_output[b])));
}

// The params structs: fields named as the schema's arguments, filled by the
// generated <op>_params(call) (build/gen/fastspec/params/).
struct TopPCandidatesParams {
  const void* probs;                         // [T, V] f32 / f16 / bf16
  int32_t probs_dtype;                       // ProbDtype of probs
  const float* top_p;                        // [B] float32
  const int32_t* batch_id_per_token_output;  // [T] int32
  const float* min_p;                        // [B] float32, or nullptr: no min_p
  int64_t* candidate_ids;                    // [T, K'] int64, written
  float* candidate_scores;                   // [T, K'] float32, written
  int32_t* candidate_lens;                   // [T] int32, written
  int64_t rows;                              // T
  int64_t vocab;                             // V
  int64_t batch;                             // B
  int32_t max_candidate_len;                 // K' in [1, min(V, 1024)]
  int32_t num_threads;                       // CPU only: 1 runs inline, else the thread pool
};

struct SampleTokensParams {
  const void* probs;                         // [T, V] f32 / f16 / bf16
  int32_t probs_dtype;                       // ProbDtype of probs
  const float* top_p;                        // [B] float32
  const int32_t* top_k;                      // [B] int32
  const int64_t* seed;                       // [B] int64
  const int64_t* step_idx;                   // [B] int64
  const int32_t* batch_id_per_token_output;  // [T] int32
  const float* min_p;                        // [B] float32, or nullptr: no min_p
  const int32_t* cu_seqlens_q_output;        // [B + 1] int32
  int64_t* tokens;                           // [T] int64, written
  int64_t rows;                              // T
  int64_t vocab;                             // V
  int64_t batch;                             // B
  int32_t num_threads;                       // CPU only: 1 runs inline, else the thread pool
  uint32_t rand_stream;                      // rand64 stream: kStreamTarget or kStreamDraft
};

struct TopKTopPProbsParams {
  const void* probs;                         // [T, V] f32 / f16 / bf16
  int32_t probs_dtype;                       // ProbDtype of probs
  const float* top_p;                        // [B] float32
  const int32_t* top_k;                      // [B] int32
  const int32_t* batch_id_per_token_output;  // [T] int32
  const float* min_p;                        // [B] float32, or nullptr: no min_p
  float* target_probs;                       // [T, V] float32, written (every element)
  int64_t rows;                              // T
  int64_t vocab;                             // V
  int64_t batch;                             // B
  int32_t num_threads;                       // CPU only: 1 runs inline, else the thread pool
};

// The random streams sample_tokens may draw with: TARGET (the target's
// samples) or DRAFT (a draft model's samples, same seed, independent draws).
FS_HD bool sample_stream_ok(uint32_t stream) { return stream == kStreamTarget || stream == kStreamDraft; }

// Host-side validation shared by every entry point: kOk or kInvalidArgument.
inline int check_sampling_sizes(int64_t rows, int64_t vocab, int64_t batch, int32_t dtype) {
  if (rows < 0 || vocab < 1 || vocab >= (int64_t{1} << 31) || batch < 0) return kInvalidArgument;
  if (dtype != kProbF32 && dtype != kProbF16 && dtype != kProbBF16) return kInvalidArgument;
  return kOk;
}

// CPU: threads across rows; every output written. Returns kOk or kInvalidArgument.
// XPU: one cluster per row (rows strided over clusters), the histograms in
// shared memory, one launch per op (custom_ops/xpu).
// CUDA: one block per row, one launch, no allocation, no host synchronisation
// (CUDA Graph safe); outputs go to the caller's buffers.
FASTSPEC_LAUNCHERS(top_p_candidates, TopPCandidatesParams);
FASTSPEC_LAUNCHERS(sample_tokens, SampleTokensParams);
FASTSPEC_LAUNCHERS(top_k_top_p_probs, TopKTopPProbsParams);

}  // namespace fastspec

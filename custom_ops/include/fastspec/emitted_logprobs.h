// emitted_logprobs: parameters, the arithmetic every backend shares, and the
// launcher declarations. Semantics: docs/ops/emitted_logprobs.md; the numpy twin
// is fastspec/reference/logprobs.py (emitted_logprobs).
//
// One record per (slot b, token j): the row's log-softmax needs its maximum and
// the sum of exp(s - m), taken exactly as temperature_softmax takes them (its exp,
// its 256 lanes folded pairwise), then the project's log of the sum; the listed
// tokens are chosen by exact comparisons of s (then the id), so every backend
// picks the same ones whatever order it looks at them in.
#pragma once

#include <cstdint>

#include "fastspec/common.h"
#include "fastspec/float_ops.h"
#include "fastspec/temperature_softmax.h"

namespace fastspec {

struct EmittedLogprobsParams {
  const float* logits;                 // [T, V] float32
  const float* temperature;            // [B] float32
  const int32_t* cu_seqlens_q_output;  // [B + 1] int32
  const int64_t* accept_tokens;        // [B, K + 1] int64
  const int32_t* accept_num;           // [B] int32
  const int32_t* accept_nodes;         // [B, K + 1] int32, or nullptr: token j's row is cu[b] + j
  int64_t* logprob_keys;               // [B, K + 1, width + 1] int64, new
  int64_t rows;                        // T
  int64_t vocab;                       // V
  int64_t batch;                       // B
  int64_t draft_cols;                  // K + 1
  int32_t width;
};

// The key layout (fastspec/core/logprob_keys.py).
constexpr int kKeyIdBits = 28;
constexpr int64_t kKeyIdMask = (int64_t{1} << kKeyIdBits) - 1;
constexpr int64_t kKeyCodeInf = int64_t{1} << 33;
constexpr int64_t kKeyCodeTop = int64_t{1} << 34;

// The key of a log-probability (<= 0, -inf or NaN: NaN reads as -inf) and a token id.
FS_HD int64_t logprob_key(float logprob, int64_t id) {
  const uint32_t bits = f32_to_bits(logprob) & 0x7fffffffu;  // -logprob
  const uint32_t exponent = bits >> 23, mantissa = bits & 0x7fffffu;
  int64_t q;
  if (exponent == 0xffu) {
    q = kKeyCodeInf;
  } else if (exponent > 0) {
    q = (int64_t{exponent} + 23) * (int64_t{1} << 24) + (int64_t{1} << 23) + mantissa;
  } else if (mantissa > 0) {  // a subnormal: e = -149 + floor(log2(mantissa)), m normalised
    int s = 22;
    while ((mantissa >> s) == 0) --s;
    q = int64_t{s + 1} * (int64_t{1} << 24) + (int64_t{mantissa} << (23 - s));
  } else {
    q = 0;
  }
  return (kKeyCodeTop - q) * (int64_t{1} << kKeyIdBits) + (kKeyIdMask - id);
}

// The temperature a row divides by: its request's when a finite number >= 2^-126, else 1.
FS_HD float logprobs_temperature(float t) { return t >= kFloat32MinNormal && t <= kFloat32Max ? t : 1.0f; }

// Does (s1, v1) come before (s2, v2) in a record's list: the larger s, then the smaller id.
FS_HD bool listed_before(float s1, int64_t v1, float s2, int64_t v2) { return s1 > s2 || (s1 == s2 && v1 < v2); }

FS_HD float logprob_of(float s, float m, float log_sum) { return sub_f32(sub_f32(s, m), log_sum); }

// Where slot b's token j was drawn: false when it was not emitted (or there are no
// rows); else its row (clamped to [0, T)) and its token (clamped to [0, V)).
FS_HD bool emitted_row(const EmittedLogprobsParams& p, int64_t b, int64_t j, int64_t* row, int64_t* token) {
  const int32_t n = p.accept_num[b];
  if (j >= n || p.rows == 0) return false;
  const int64_t node = p.accept_nodes ? p.accept_nodes[b * p.draft_cols + j] : j;
  const int64_t t = int64_t{p.cu_seqlens_q_output[b]} + (node > 0 ? node : 0);
  *row = t < 0 ? 0 : t >= p.rows ? p.rows - 1 : t;
  const int64_t v = p.accept_tokens[b * p.draft_cols + j];
  *token = v < 0 ? 0 : v >= p.vocab ? p.vocab - 1 : v;
  return true;
}

FS_HD int64_t listed_count(const EmittedLogprobsParams& p) { return p.width < p.vocab ? p.width : p.vocab; }

FS_HD int64_t* record_of(const EmittedLogprobsParams& p, int64_t b, int64_t j) {
  return p.logprob_keys + (b * p.draft_cols + j) * (int64_t{p.width} + 1);
}

// A row without log-probabilities (a NaN logit, a maximum that is not finite): every
// one is -inf, so the list is the first ids.
FS_HD void write_row_without_logprobs(const EmittedLogprobsParams& p, int64_t* record, int64_t token) {
  const float minus_inf = bits_to_f32(0xff800000u);
  record[0] = logprob_key(minus_inf, token);
  for (int64_t i = 0; i < p.width; ++i) record[1 + i] = i < p.vocab ? logprob_key(minus_inf, i) : 0;
}

FS_HD bool logprobs_sizes_ok(const EmittedLogprobsParams& p) {
  return p.rows >= 0 && p.vocab >= 1 && p.vocab <= (int64_t{1} << kKeyIdBits) && p.batch >= 1 && p.draft_cols >= 1 &&
         p.width >= 0;
}

// CPU: a record by one thread (the list kept sorted as the row streams by), records
// over the pool from 2^18 entries of rows to read. Returns kOk.
// XPU: a record per core, records strided over the grid; the row streamed through LM.
// CUDA: a block of 256 threads per record (thread j owns lane j); the list is picked
// one entry at a time by a block-wide maximum. No allocation, no host
// synchronisation: safe inside CUDA Graph capture.
FASTSPEC_LAUNCHERS(emitted_logprobs, EmittedLogprobsParams);

}  // namespace fastspec

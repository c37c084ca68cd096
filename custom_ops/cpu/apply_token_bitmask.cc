// apply_token_bitmask on the CPU: a row by one thread, a word of the mask at a
// time: a word with every bit set costs one compare, one with none a fill, a
// mixed one a branch-free select; rows spread over the pool from 2^20 entries.
#include "fastspec/apply_token_bitmask.h"

#include "fastspec/parallel.h"

namespace fastspec {
namespace {

template <typename Elem>
void mask_row(Elem* row, const int32_t* words, int64_t vocab, int64_t mask_words, Elem neg_inf) {
  const int64_t covered = min64(vocab, mask_words * 32);
  for (int64_t base = 0; base < covered; base += 32) {
    const uint32_t word = static_cast<uint32_t>(words[base >> 5]);
    const int64_t n = min64(32, covered - base);
    Elem* at = row + base;
    if (word == 0xffffffffu) continue;  // every token kept: nothing to write
    if (word == 0) {  // every token forbidden (most words of a grammar's mask): a plain fill
      for (int64_t i = 0; i < n; ++i) at[i] = neg_inf;
      continue;
    }
    // a select without a branch, which the compiler vectorises; a kept entry is written back unchanged
    for (int64_t i = 0; i < n; ++i) {
      const Elem keep = static_cast<Elem>(0u - ((word >> i) & 1u));
      at[i] = static_cast<Elem>((at[i] & keep) | (neg_inf & static_cast<Elem>(~keep)));
    }
  }
  for (int64_t v = covered; v < vocab; ++v) row[v] = neg_inf;  // past the mask: forbidden
}

template <typename Elem>
void mask_rows(const ApplyTokenBitmaskParams& a, Elem neg_inf) {
  Elem* logits = static_cast<Elem*>(a.logits);
  const auto run = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t m = bitmask_row(a.bitmask_index, t, a.mask_rows);
      if (m >= 0) mask_row(logits + t * a.vocab, a.token_bitmask + m * a.mask_words, a.vocab, a.mask_words, neg_inf);
    }
  };
  if (a.rows * a.vocab >= (int64_t{1} << 20) && a.rows > 1) {
    parallel_for(a.rows, 1, run);
  } else {
    run(0, a.rows);
  }
}

}  // namespace

int apply_token_bitmask_cpu(const ApplyTokenBitmaskParams& a) {
  if (!bitmask_sizes_ok(a)) return kInvalidArgument;
  if (a.logits_dtype == kProbF32) {
    mask_rows<uint32_t>(a, kNegInfF32);
  } else {
    mask_rows<uint16_t>(a, a.logits_dtype == kProbF16 ? kNegInfF16 : kNegInfBF16);
  }
  return kOk;
}

}  // namespace fastspec

// Probability dtypes on the host: the kernels' ProbDtype of a tensor's dtype
// code (op_call.h DType; the schema admits float32, float16 and bfloat16), and
// the element tag (sampling.h F32Tag, ...) the kernels are templates over.
#pragma once

#include "fastspec/op_call.h"
#include "fastspec/sampling.h"

namespace fastspec {

inline int32_t prob_dtype(int32_t dtype) {
  return dtype == kFloat16 ? kProbF16 : dtype == kBFloat16 ? kProbBF16 : kProbF32;
}

// fn(F32Tag{}), fn(F16Tag{}) or fn(BF16Tag{}) for a ProbDtype.
template <typename Fn>
auto with_prob_tag(int32_t probs_dtype, const Fn& fn) {
  switch (probs_dtype) {
    case kProbF32:
      return fn(F32Tag{});
    case kProbF16:
      return fn(F16Tag{});
    default:
      return fn(BF16Tag{});
  }
}

}  // namespace fastspec

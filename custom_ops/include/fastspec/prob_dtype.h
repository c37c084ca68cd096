// The kernels' tag (sampling.h ProbDtype) of a probability tensor's dtype
// code (op_call.h DType); the schema admits only float32, float16 and bfloat16.
#pragma once

#include "fastspec/op_call.h"
#include "fastspec/sampling.h"

namespace fastspec {

inline int32_t prob_dtype(int32_t dtype) {
  return dtype == kFloat16 ? kProbF16 : dtype == kBFloat16 ? kProbBF16 : kProbF32;
}

}  // namespace fastspec

// Host-side argument checks shared by the Paddle op files. Every failure
// names the op, the argument, what was expected and what was given, and is
// raised as a Python exception by Paddle.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "paddle/extension.h"

#ifdef FASTSPEC_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace fastspec_paddle {

inline std::string dtype_name(paddle::DataType dtype) {
  switch (dtype) {
    case paddle::DataType::BOOL: return "bool";
    case paddle::DataType::INT8: return "int8";
    case paddle::DataType::UINT8: return "uint8";
    case paddle::DataType::INT16: return "int16";
    case paddle::DataType::INT32: return "int32";
    case paddle::DataType::INT64: return "int64";
    case paddle::DataType::FLOAT16: return "float16";
    case paddle::DataType::BFLOAT16: return "bfloat16";
    case paddle::DataType::FLOAT32: return "float32";
    case paddle::DataType::FLOAT64: return "float64";
    default: return "dtype#" + std::to_string(static_cast<int>(dtype));
  }
}

inline std::string shape_str(const std::vector<int64_t>& shape) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << "]";
  return out.str();
}

[[noreturn]] inline void fail(const char* op, const std::string& message) {
  PD_THROW(std::string(op) + ": " + message);
}

inline void expect_dtype(const char* op, const char* name, const paddle::Tensor& t,
                         paddle::DataType dtype) {
  if (t.dtype() != dtype) {
    fail(op, std::string("argument '") + name + "' must be " + dtype_name(dtype) + ", got " +
                 dtype_name(t.dtype()));
  }
}

// A per-request tensor, [B] or [B, 1]; returns B.
inline int64_t per_request(const char* op, const char* name, const paddle::Tensor& t,
                           paddle::DataType dtype) {
  expect_dtype(op, name, t, dtype);
  const auto shape = t.shape();
  if (shape.size() == 1 || (shape.size() == 2 && shape[1] == 1)) return shape[0];
  fail(op, std::string("argument '") + name + "' must have shape [B] or [B, 1], got " +
               shape_str(shape));
}

// A rank-2 tensor; returns its shape.
inline std::vector<int64_t> matrix(const char* op, const char* name, const paddle::Tensor& t,
                                   paddle::DataType dtype) {
  expect_dtype(op, name, t, dtype);
  const auto shape = t.shape();
  if (shape.size() != 2) {
    fail(op, std::string("argument '") + name + "' must have rank 2, got shape " +
                 shape_str(shape));
  }
  return shape;
}

inline void expect_size(const char* op, const char* name, int64_t actual, const char* what,
                        int64_t expected) {
  if (actual != expected) {
    fail(op, std::string("argument '") + name + "' has " + std::to_string(actual) + " " + what +
                 ", expected " + std::to_string(expected));
  }
}

inline void expect_same_place(const char* op, const paddle::Tensor& first,
                              std::initializer_list<std::pair<const char*, const paddle::Tensor*>> rest) {
  for (const auto& [name, t] : rest) {
    if (t->place() != first.place()) {
      fail(op, std::string("argument '") + name + "' is on " + t->place().DebugString() +
                   " but the other arguments are on " + first.place().DebugString());
    }
  }
}

inline void expect_attr(const char* op, const char* name, bool ok, const std::string& rule,
                        int64_t value) {
  if (!ok) {
    fail(op, std::string("attribute '") + name + "' must be " + rule + ", got " +
                 std::to_string(value));
  }
}

#ifdef FASTSPEC_WITH_CUDA
inline void expect_cuda_ok(const char* op, cudaError_t status) {
  if (status != cudaSuccess) fail(op, std::string("CUDA launch failed: ") + cudaGetErrorString(status));
}
#endif

[[noreturn]] inline void unsupported_place(const char* op, const paddle::Tensor& t) {
  fail(op, "no kernel for place " + t.place().DebugString() +
               " (this build has CPU" +
#ifdef FASTSPEC_WITH_CUDA
               std::string(" and CUDA") +
#else
               std::string("") +
#endif
               ")");
}

}  // namespace fastspec_paddle

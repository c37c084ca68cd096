// The Paddle side of every op, shared by the generated registrations
// (build/gen/paddle_ops.cc, from fastspec/core/schema.py): a Call collects the
// op's tensors and attributes, guards their dtypes and shapes against the
// schema's tables, allocates the new outputs and runs the op's launcher for
// the tensors' place through fastspec::run.
//
// An eager call reaches this guard unchecked (fastspec/ops/_eager.py); a static
// graph may be built with unknown sizes and run with any. The guard checks the
// schema's rules in the order fastspec/core/validate.py does, and a refusal says
// which rule failed twice: in words (what a static graph's run shows) and as a
// record, one JSON line "fastspec-refusal: {...}" (rule, argument, actual and
// what the rule's words need), which fastspec/core/refusals.py words for Python.
// This is the only file, with the generated one, that includes paddle/extension.h.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "fastspec/op_call.h"
#include "paddle/common/enforce.h"
#include "paddle/extension.h"

#ifdef __linux__
#include <sys/mman.h>
#endif
#ifdef FASTSPEC_WITH_CUDA
#include <cuda_runtime_api.h>
#endif
#ifdef FASTSPEC_WITH_XPU  // paddlepaddle-xpu with XRE/XDNN headers: not compilable against the CPU wheel
#include "paddle/phi/backends/xpu/xpu_context.h"
#endif

namespace fastspec_paddle {

// New CPU outputs from this size on are asked for 2 MB pages.
constexpr int64_t kHugePageOutputBytes = int64_t{8} << 20;

// Asks Linux to back [data, data + bytes) with transparent huge pages where they are enabled
// ("madvise" mode, the common default). Paddle hands a call fresh memory for each output, and
// faulting a large one in 4 KB at a time costs more than the kernel that writes it: a [384, 32000]
// softmax took 12,000 page faults, about 90 % of the call. Only the 2 MB-aligned inside is advised; a
// hint the kernel may ignore, never an error.
inline void advise_huge_pages(void* data, int64_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr uintptr_t kHuge = uintptr_t{1} << 21;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + static_cast<uintptr_t>(bytes)) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

// Every refusal of the guard: Paddle's InvalidArgument (a Python ValueError). Unlike PD_THROW's
// exception, Paddle's static-graph executor keeps its message (it turns any other exception into a
// bare "std::exception"), so a static graph's error names the op and the argument too.
[[noreturn]] inline void throw_invalid(const std::string& message) {
  PADDLE_THROW(common::errors::InvalidArgument("%s", message.c_str()));
}

// A refusal's record: {"rule": ..., "argument": ..., "actual": ..., ...} (fastspec/core/refusals.py).
class Record {
 public:
  explicit Record(const char* rule, const std::string& argument = "") {
    text("rule", rule);
    if (!argument.empty()) text("argument", argument);
  }
  Record& text(const char* key, const std::string& value) {
    std::string quoted = "\"";
    for (char c : value) {
      if (c == '"' || c == '\\') quoted += '\\';
      if (static_cast<unsigned char>(c) >= 0x20) quoted += c;
    }
    return raw(key, quoted + "\"");
  }
  Record& number(const char* key, int64_t value) { return raw(key, std::to_string(value)); }
  Record& bound(const char* key, int64_t value);  // a bound, null for none
  Record& numbers(const char* key, const std::vector<int64_t>& values) {
    std::string list = "[";
    for (size_t i = 0; i < values.size(); ++i) list += (i ? ", " : "") + std::to_string(values[i]);
    return raw(key, list + "]");
  }
  std::string json() const { return "{" + fields_ + "}"; }

 private:
  Record& raw(const char* key, const std::string& value) {
    fields_ += (fields_.empty() ? "\"" : ", \"") + std::string(key) + "\": " + value;
    return *this;
  }
  std::string fields_;
};

struct DimSpec {
  int symbol;  // index into OpSpec::symbols, -1 for a literal size
  int64_t offset;
};
struct ShapeSpec {
  int rank;
  DimSpec dims[3];  // up to rank 3 (emitted_logprobs' records)
};
struct TensorSpec {
  const char* name;
  uint32_t dtypes;     // bit (1 << fastspec::DType) per allowed dtype
  bool same_dtype;     // shares one dtype with the other multi-dtype tensors
  uint32_t needed_by;  // bit per strategy that reads it; 0: every strategy
  bool optional;
  bool output;
  int num_shapes;
  ShapeSpec shapes[2];
};
constexpr int64_t kNoBound = INT64_MIN;
inline int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }  // for the schema's bound expressions
inline int64_t max(int64_t a, int64_t b) { return a > b ? a : b; }
struct Range {
  int64_t lo, hi;  // kNoBound: none
};
struct Limit {
  const char* backend;  // "cuda" or "xpu"
  int symbol;
  int64_t limit;
};
struct OpSpec {
  const char* name;
  const TensorSpec* tensors;
  int num_tensors, num_inputs;
  const char* const* symbols;
  const Range* ranges;
  int num_symbols;
  const int* attr_symbols;  // the symbol an int attribute binds, or -1
  int num_attrs;
  int strategy_attr;        // the attribute that picks needed_by, or -1
  const Limit* limits;      // the devices' limits on the symbols (fastspec/core/schema.py device_limits)
  int num_limits;
};

inline Record& Record::bound(const char* key, int64_t value) {
  return value == kNoBound ? raw(key, "null") : number(key, value);
}

// A dtype as the Python checks name it.
inline std::string dtype_name(paddle::DataType dtype) { return phi::DataTypeToString(dtype); }

// A place as the Python checks name it: cpu, cuda:0, xpu:1.
inline std::string device_name(const paddle::Place& place) {
  switch (place.GetType()) {
    case phi::AllocationType::CPU:
      return "cpu";
    case phi::AllocationType::GPU:
      return "cuda:" + std::to_string(place.GetDeviceId());
    case phi::AllocationType::XPU:
      return "xpu:" + std::to_string(place.GetDeviceId());
    default:
      return place.DebugString();
  }
}

// The dtype's code in fastspec/common.h, or -1 for a dtype no op argument takes.
inline int dtype_code(paddle::DataType dtype) {
  static const std::pair<paddle::DataType, int> kCodes[] = {
      {paddle::DataType::BOOL, fastspec::kBool},       {paddle::DataType::INT32, fastspec::kInt32},
      {paddle::DataType::INT64, fastspec::kInt64},     {paddle::DataType::FLOAT32, fastspec::kFloat32},
      {paddle::DataType::FLOAT16, fastspec::kFloat16}, {paddle::DataType::BFLOAT16, fastspec::kBFloat16},
  };
  for (const auto& [paddle_dtype, code] : kCodes) {
    if (paddle_dtype == dtype) return code;
  }
  return -1;
}

inline std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

[[noreturn]] inline void refuse(const char* op, const std::string& message, const Record& record) {
  throw_invalid(std::string(op) + ": " + message + "\nfastspec-refusal: " + record.json() + "\n");
}

// The index of `value` (any case) among `choices`.
inline int64_t choice_index(const char* op, const char* attr, const std::string& value,
                            std::initializer_list<const char*> choices) {
  std::string lower = value;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  int64_t index = 0;
  for (const char* choice : choices) {
    if (lower == choice) return index;
    ++index;
  }
  refuse(op, std::string("attribute '") + attr + "' has no choice '" + value + "'",
         Record("choice", attr).text("actual", lower));
}

class Call {
 public:
  explicit Call(const OpSpec& spec)
      : spec_(spec),
        refs_(spec.num_tensors),
        tensors_(spec.num_tensors),
        attrs_(spec.num_attrs > 0 ? spec.num_attrs : 1),
        dims_(spec.num_symbols, -1),
        bound_(spec.num_symbols, false),
        source_(spec.num_symbols, 0) {}

  void input(int index, const paddle::Tensor& t) { set(index, t); }
  void input(int index, const paddle::optional<paddle::Tensor>& t) {
    if (t) set(index, *t);
  }
  void attr(int index, int64_t value) {
    attrs_[index] = value;
    if (spec_.attr_symbols[index] >= 0) dims_[spec_.attr_symbols[index]] = value;
  }

  // The dtype, shape, device and size rules of the schema, on the tensors as they are now.
  void check() {
    const int64_t strategy = spec_.strategy_attr >= 0 ? attrs_[spec_.strategy_attr] : -1;
    int first_multi = -1;
    std::vector<int> absent_needed;  // tensors the call needs that came absent (or empty)
    int first = -1;                  // the first present tensor the call reads
    for (int i = 0; i < spec_.num_inputs; ++i) {
      const TensorSpec& ts = spec_.tensors[i];
      fastspec::TensorRef& ref = refs_[i];
      const bool used = ts.needed_by == 0 || (strategy >= 0 && ((ts.needed_by >> strategy) & 1u));
      if (!used) {
        ref.present = false;
        continue;
      }
      // Paddle hands an empty optional tensor (T == 0) to a kernel as absent: no rows, nothing read.
      // Whether it may be empty is checked once the other tensors have bound the sizes.
      if (!ref.present) {
        if (!ts.optional || ts.needed_by != 0) absent_needed.push_back(i);  // not a truly optional one
        continue;
      }
      const paddle::Tensor& t = tensors_[i];
      if (ref.dtype < 0 || !((ts.dtypes >> ref.dtype) & 1u)) {
        fail(std::string("argument '") + ts.name + "' has an unsupported dtype",
             Record("dtype", ts.name).text("actual", dtype_name(t.dtype())));
      }
      if (ts.same_dtype) {
        if (first_multi < 0) first_multi = i;
        if (refs_[first_multi].dtype != ref.dtype) {
          const char* first = spec_.tensors[first_multi].name;
          fail(std::string("argument '") + ts.name + "' must have the dtype of '" + first + "'",
               Record("same_dtype", ts.name)
                   .text("actual", dtype_name(t.dtype()))
                   .text("other", first)
                   .text("expected", dtype_name(tensors_[first_multi].dtype())));
        }
      }
      bind(i, t.shape());
      if (first < 0) first = i;
    }
    for (int i = first + 1; first >= 0 && i < spec_.num_inputs; ++i) {  // present now: read by the call
      const paddle::Place& place = tensors_[first].place();
      if (!refs_[i].present || tensors_[i].place() == place) continue;
      const std::string device = device_name(tensors_[i].place());
      fail(std::string("argument '") + spec_.tensors[i].name + "' is on " + device + ", not on " + device_name(place),
           Record("device", spec_.tensors[i].name)
               .text("actual", device)
               .text("other", spec_.tensors[first].name)
               .text("other_device", device_name(place)));
    }
    for (int i : absent_needed) expect_may_be_empty(spec_.tensors[i]);
    for (int s = 0; s < spec_.num_symbols; ++s) {
      const Range& r = spec_.ranges[s];
      if (!bound_[s]) continue;  // no tensor gave it (attribute ranges: expect_range)
      if ((r.lo != kNoBound && dims_[s] < r.lo) || (r.hi != kNoBound && dims_[s] > r.hi)) {
        fail(std::string(spec_.symbols[s]) + " = " + std::to_string(dims_[s]) + " is out of range",
             Record("symbol_range")
                 .number("actual", dims_[s])
                 .text("symbol", spec_.symbols[s])
                 .text("source", source_of(s)));
      }
    }
  }

  // The devices' limits on the sizes (after the attribute ranges, as the Python checks).
  void check_limits() const {
    const paddle::Place& place = tensors_[first_present()].place();
    if (spec_.num_limits == 0 || place.GetType() == phi::AllocationType::CPU) return;  // no CPU limits
    const std::string backend = device_name(place);
    for (int l = 0; l < spec_.num_limits; ++l) {
      const Limit& limit = spec_.limits[l];
      const int s = limit.symbol;
      if (backend.rfind(limit.backend, 0) != 0 || !bound_[s] || dims_[s] <= limit.limit) continue;
      fail(std::string(spec_.symbols[s]) + " = " + std::to_string(dims_[s]) + " exceeds the " + limit.backend +
               " limit of " + std::to_string(limit.limit),
           Record("limit")
               .number("actual", dims_[s])
               .text("symbol", spec_.symbols[s])
               .text("source", source_of(s))
               .text("backend", limit.backend));
    }
  }

  int64_t dim(int symbol) const { return dims_[symbol]; }

  void expect_range(int index, const char* name, int64_t lo, int64_t hi, const char* rule) const {
    const int64_t v = attrs_[index];
    if ((lo != kNoBound && v < lo) || (hi != kNoBound && v > hi)) {
      fail(std::string("attribute '") + name + "' must be in " + rule + ", got " + std::to_string(v),
           Record("attr_range", name).number("actual", v).bound("lo", lo).bound("hi", hi));
    }
  }

  void expect_choice(int index, const char* name, std::initializer_list<int64_t> choices) const {
    for (int64_t c : choices) {
      if (attrs_[index] == c) return;
    }
    fail(std::string("attribute '") + name + "' has no choice " + std::to_string(attrs_[index]),
         Record("choice", name).number("actual", attrs_[index]));
  }

  // Allocates new output `index` on the inputs' place, shaped by the schema.
  paddle::Tensor output(int index, paddle::DataType dtype) {
    const ShapeSpec& shape = spec_.tensors[index].shapes[0];
    std::vector<int64_t> sizes;
    for (int a = 0; a < shape.rank; ++a) {
      const DimSpec& d = shape.dims[a];
      sizes.push_back((d.symbol < 0 ? 0 : std::max<int64_t>(dims_[d.symbol], 0)) + d.offset);
    }
    paddle::Tensor t = paddle::empty(sizes, dtype, tensors_[first_present()].place());
    const int64_t bytes = t.numel() * static_cast<int64_t>(phi::SizeOf(dtype));
    if (t.is_cpu() && bytes >= kHugePageOutputBytes) advise_huge_pages(const_cast<void*>(t.data()), bytes);
    set(index, t);
    return t;
  }

  // Runs the op's launcher for the tensors' place.
  void run() {
    const paddle::Tensor& anchor = tensors_[first_present()];
    fastspec::OpCall call;
    call.tensors = refs_.data();
    call.attrs = attrs_.data();
    if (anchor.is_cpu()) {
      call.backend = fastspec::Backend::kCpu;
    } else if (anchor.is_gpu()) {
      call.backend = fastspec::Backend::kCuda;
#ifdef FASTSPEC_WITH_CUDA
      call.stream = anchor.stream();
#endif
    } else if (anchor.place().GetType() == phi::AllocationType::XPU) {
#ifdef FASTSPEC_WITH_XPU
      // Paddle's stream and cluster count for this device (as FastDeploy's XPU ops take them).
      const auto* context =
          static_cast<const phi::XPUContext*>(paddle::experimental::DeviceContextPool::Instance().Get(anchor.place()));
      call.backend = fastspec::Backend::kXpu;
      call.stream = context->stream();
      call.xpu_grid.clusters = context->x_context()->ncluster();
      call.xpu_grid.cores = 64;
#else
      fail(
          "this build has no XPU kernels for Paddle tensors (build with an XTDK: CLANG_PATH; the emulated "
          "XPU runs in fastspec.arrays with backend='xpu_emulator')");
#endif
    } else {
      fail("no kernel for place " + anchor.place().DebugString() + " (this build has " +
           fastspec::backends_of(spec_.name) + ")");
    }
    const int status = fastspec::run(spec_.name, call);
    if (status == fastspec::kNoKernel) {
      fail("no kernel for place " + anchor.place().DebugString() + " (this build has " +
           fastspec::backends_of(spec_.name) + ")");
    }
    if (status != fastspec::kOk) {
      std::string what = std::to_string(status);
#ifdef FASTSPEC_WITH_CUDA
      if (call.backend == fastspec::Backend::kCuda) what = cudaGetErrorString(static_cast<cudaError_t>(status));
#endif
      fail(std::string("the ") + fastspec::backend_name(call.backend) + " kernel failed: " + what);
    }
  }

 private:
  void set(int index, const paddle::Tensor& t) {
    tensors_[index] = t;
    fastspec::TensorRef& ref = refs_[index];
    ref.present = true;
    ref.dtype = dtype_code(t.dtype());
    ref.data = t.numel() > 0 ? const_cast<void*>(t.data()) : nullptr;
    const auto shape = t.shape();
    ref.rank = static_cast<int32_t>(shape.size());
    for (size_t a = 0; a < 3; ++a) ref.shape[a] = a < shape.size() ? shape[a] : 1;
  }

  int first_present() const {
    for (int i = 0; i < spec_.num_inputs; ++i) {
      if (refs_[i].present) return i;
    }
    return 0;
  }

  void bind(int index, const std::vector<int64_t>& shape) {
    const TensorSpec& ts = spec_.tensors[index];
    for (int alt = 0; alt < ts.num_shapes; ++alt) {
      const ShapeSpec& s = ts.shapes[alt];
      if (s.rank != static_cast<int>(shape.size())) continue;
      bool literal_ok = true;
      for (int a = 0; a < s.rank; ++a) literal_ok &= s.dims[a].symbol >= 0 || shape[a] == s.dims[a].offset;
      if (!literal_ok) continue;
      for (int a = 0; a < s.rank; ++a) {
        const DimSpec& d = s.dims[a];
        if (d.symbol < 0) continue;
        int64_t& bound = dims_[d.symbol];
        const int64_t value = shape[a] - d.offset;
        if (!bound_[d.symbol]) {
          bound = value;
          bound_[d.symbol] = true;
          source_[d.symbol] = index;
        } else if (bound != value) {
          fail(std::string("argument '") + ts.name + "' has shape " + shape_text(shape) + ", which disagrees with " +
                   spec_.symbols[d.symbol] + " = " + std::to_string(bound),
               Record("size", ts.name)
                   .number("actual", shape[a])
                   .number("axis", a)
                   .text("symbol", spec_.symbols[d.symbol])
                   .number("offset", d.offset)
                   .number("expected", bound + d.offset)
                   .text("source", source_of(d.symbol)));
        }
      }
      return;
    }
    fail(std::string("argument '") + ts.name + "' has shape " + shape_text(shape) + ", not the schema's",
         Record("shape", ts.name).numbers("actual", shape));
  }

  // A tensor the call needs came absent: fine only if it could be empty, i.e. some dimension of its
  // shape may be 0 with the sizes the other tensors bound (else it silently drops every row).
  void expect_may_be_empty(const TensorSpec& ts) const {
    const ShapeSpec& s = ts.shapes[0];
    std::string sizes;
    for (int a = 0; a < s.rank; ++a) {
      const DimSpec& d = s.dims[a];
      if (d.symbol < 0 ? d.offset == 0 : (!bound_[d.symbol] || dims_[d.symbol] + d.offset == 0)) return;
      sizes += std::string(a ? ", " : "") + (d.symbol < 0 ? std::to_string(d.offset)
                                                          : std::string(spec_.symbols[d.symbol]) + " = " +
                                                                std::to_string(dims_[d.symbol] + d.offset));
    }
    fail(
        std::string("argument '") + ts.name + "' is missing or empty, but the call needs it with shape [" + sizes + "]",
        Record("missing", ts.name).text("sizes", sizes));
  }

  [[noreturn]] void fail(const std::string& message, const Record& record) const {
    refuse(spec_.name, message, record);
  }
  // Not a refusal of the call's arguments (no kernel there, a kernel's error): words alone.
  [[noreturn]] void fail(const std::string& message) const { throw_invalid(std::string(spec_.name) + ": " + message); }

  const OpSpec& spec_;
  std::vector<fastspec::TensorRef> refs_;
  std::vector<paddle::Tensor> tensors_;
  std::vector<int64_t> attrs_;
  std::vector<int64_t> dims_;
  std::vector<bool> bound_;  // dims_[s] was set by a tensor
  std::vector<int> source_;  // the tensor that set it
  const char* source_of(int symbol) const { return spec_.tensors[source_[symbol]].name; }
};

}  // namespace fastspec_paddle

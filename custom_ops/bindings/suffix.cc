// The suffix-decoding host cache (custom_ops/suffix/) as the class
// fastspec_kernels.SuffixCacheCore, and DraftChoice's batch update as
// draft_choice_observe. The per-step single-request calls
// (speculate, draft, add_active_response) check their arguments here, where they are
// read anyway: a token id out of range or a rule value out of its range is refused with
// a record of the rule (a dict: rule, argument, actual, ...) that fastspec/core/refusals.py
// words; anything they do not take as it is (not a list, tuple or 1-D integer array of
// ids, a rule value that is not a plain number) gets None / False, and
// fastspec/runtime/suffix.py checks the call in Python, converts it and calls again. Other calls
// get arguments Python checked first; batch calls take C-contiguous numpy
// arrays of the dtypes below. The cache's std::invalid_argument (a ValueError
// here) is a last guard.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <climits>
#include <memory>
#include <optional>
#include <type_traits>

#include "../suffix/draft_choice.h"
#include "../suffix/suffix_cache.h"
#include "bindings.h"

namespace fastspec_bindings {

namespace {

using fastspec::suffix::Draft;
using fastspec::suffix::DraftRows;
using fastspec::suffix::NgramRule;
using fastspec::suffix::SpecRule;
using fastspec::suffix::SuffixCache;

template <typename T>
using Array = py::array_t<T, py::array::c_style | py::array::forcecast>;

template <typename T>
const T* data_of(const Array<T>& a) {
  return a.size() ? a.data() : nullptr;
}

// What a quick reader made of an argument: taken as it is, left to Python to convert (or to
// refuse in its words: a type it does not take), or refused here with a record of the rule.
enum class Taken { kYes, kConvert, kRefused };

// The refusal record of a token id out of [0, max_token] (fastspec/core/refusals.py "token_id"):
// the lowest id when one is negative, else the highest, as the Python check names it.
py::dict token_refusal(const char* name, int64_t lowest, int64_t highest, int64_t max_token) {
  return py::dict(py::arg("rule") = "token_id", py::arg("argument") = name,
                  py::arg("actual") = lowest < 0 ? lowest : highest, py::arg("high") = max_token);
}

// Token ids in [0, max_token] from a Python int, a list or tuple of Python ints or a 1-D int32 /
// int64 array (its last `tail` ids when tail >= 0) into out. kRefused sets `refusal`.
Taken quick_tokens(py::handle obj, const char* name, int64_t max_token, int64_t tail, std::vector<int32_t>& out,
                   py::object& refusal) {
  PyObject* o = obj.ptr();
  int64_t lowest = 0, highest = 0;
  bool first = true;
  const auto take = [&](long long v, size_t i) {
    lowest = first || v < lowest ? v : lowest;
    highest = first || v > highest ? v : highest;
    first = false;
    out[i] = static_cast<int32_t>(v);
  };
  const auto verdict = [&]() {
    if (first || (lowest >= 0 && highest <= max_token)) return Taken::kYes;
    refusal = token_refusal(name, lowest, highest, max_token);
    return Taken::kRefused;
  };
  if (PyList_CheckExact(o) || PyTuple_CheckExact(o) || PyLong_CheckExact(o)) {
    const bool single = PyLong_CheckExact(o);
    const Py_ssize_t n = single ? 1 : PySequence_Fast_GET_SIZE(o);
    PyObject** items = single ? &o : PySequence_Fast_ITEMS(o);
    const Py_ssize_t start = tail >= 0 && n > tail ? n - tail : 0;
    out.resize(static_cast<size_t>(n - start));
    for (Py_ssize_t i = start; i < n; ++i) {
      if (!PyLong_CheckExact(items[i])) return Taken::kConvert;  // bool, numpy scalars, ...: Python's to convert
      int overflow = 0;
      const long long v = PyLong_AsLongLongAndOverflow(items[i], &overflow);
      if (overflow) return Taken::kConvert;
      take(v, static_cast<size_t>(i - start));
    }
    return verdict();
  }
  if (!py::isinstance<py::array>(obj)) return Taken::kConvert;
  const auto a = py::reinterpret_borrow<py::array>(obj);
  const bool wide = a.dtype().is(py::dtype::of<int64_t>());
  if (a.ndim() != 1 || !(wide || a.dtype().is(py::dtype::of<int32_t>()))) return Taken::kConvert;
  const py::ssize_t n = a.shape(0), stride = a.strides(0);
  const py::ssize_t start = tail >= 0 && n > tail ? n - tail : 0;
  const char* base = static_cast<const char*>(a.data());
  out.resize(static_cast<size_t>(n - start));
  for (py::ssize_t i = start; i < n; ++i) {
    const char* at = base + i * stride;
    take(wide ? *reinterpret_cast<const int64_t*>(at) : *reinterpret_cast<const int32_t*>(at),
         static_cast<size_t>(i - start));
  }
  return verdict();
}

// A plain Python float or int (not bool) into out (NaN included: the rule refuses it).
bool quick_number(py::handle obj, double& out) {
  PyObject* o = obj.ptr();
  if (PyFloat_CheckExact(o)) {
    out = PyFloat_AS_DOUBLE(o);
  } else if (PyLong_CheckExact(o)) {
    out = PyLong_AsDouble(o);
    if (out == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
  } else {
    return false;
  }
  return true;
}

template <typename T>
py::list as_list(const std::vector<T>& values) {
  py::list out(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    PyObject* item = std::is_floating_point_v<T> ? PyFloat_FromDouble(static_cast<double>(values[i]))
                                                 : PyLong_FromLongLong(static_cast<long long>(values[i]));
    if (!item) throw py::error_already_set();
    PyList_SET_ITEM(out.ptr(), static_cast<py::ssize_t>(i), item);
  }
  return out;
}

py::tuple as_tuple(const Draft& d) {
  return py::make_tuple(as_list(d.token_ids), as_list(d.parents), as_list(d.probs), d.score, d.match_len);
}

// A drafting rule as it comes from Python into r, checked in the order of fastspec/runtime/suffix.py.
Taken quick_rule(const SuffixCache& c, py::handle max_spec_tokens, py::handle factor, py::handle offset,
                 py::handle min_prob, SpecRule& r, py::object& refusal) {
  if (max_spec_tokens.is_none()) {
    r.max_spec_tokens = c.max_depth();
  } else {
    if (!PyLong_CheckExact(max_spec_tokens.ptr())) return Taken::kConvert;
    int overflow = 0;
    const long long limit = PyLong_AsLongLongAndOverflow(max_spec_tokens.ptr(), &overflow);
    if (overflow) return Taken::kConvert;
    if (limit < 0 || limit > INT32_MAX) {
      refusal = py::dict(py::arg("rule") = "int_range", py::arg("argument") = "max_spec_tokens",
                         py::arg("actual") = limit, py::arg("lo") = 0, py::arg("hi") = INT32_MAX);
      return Taken::kRefused;
    }
    r.max_spec_tokens = static_cast<int32_t>(limit);
  }
  const std::pair<const char*, py::handle> numbers[] = {
      {"max_spec_factor", factor}, {"max_spec_offset", offset}, {"min_token_prob", min_prob}};
  double* fields[] = {&r.max_spec_factor, &r.max_spec_offset, &r.min_token_prob};
  for (int i = 0; i < 3; ++i) {
    if (!quick_number(numbers[i].second, *fields[i])) return Taken::kConvert;
    if (*fields[i] != *fields[i]) {
      refusal = py::dict(py::arg("rule") = "number", py::arg("argument") = numbers[i].first,
                         py::arg("actual") = numbers[i].second);  // as given: the words show it so
      return Taken::kRefused;
    }
  }
  if (r.max_spec_factor < 0) {
    refusal =
        py::dict(py::arg("rule") = "not_negative", py::arg("argument") = "max_spec_factor", py::arg("actual") = factor);
    return Taken::kRefused;
  }
  return Taken::kYes;
}

// speculate's draft, None where an argument is left to Python, or the refusal's record (a dict)
py::object quick_speculate(const SuffixCache& c, int64_t req, py::handle context, py::handle max_spec_tokens,
                           py::handle factor, py::handle offset, py::handle min_prob, int32_t tree_width,
                           int32_t max_spec_depth) {
  thread_local std::vector<int32_t> tokens;
  thread_local Draft draft;
  SpecRule r;
  py::object refusal;
  Taken taken = quick_tokens(context, "context", c.max_token(), c.max_depth(), tokens, refusal);
  if (taken == Taken::kYes) taken = quick_rule(c, max_spec_tokens, factor, offset, min_prob, r, refusal);
  if (taken == Taken::kRefused) return refusal;
  if (taken == Taken::kConvert || tree_width < 1 || max_spec_depth < 0) return py::none();
  r.tree_width = tree_width;
  r.max_spec_depth = max_spec_depth;
  c.speculate(req, tokens.data(), static_cast<int64_t>(tokens.size()), r, draft);
  return as_tuple(draft);
}

// draft's token ids, None where an argument is left to Python, or the refusal's record (a dict)
py::object quick_draft(SuffixCache& c, int64_t req, py::handle max_spec_tokens, py::handle factor, py::handle offset,
                       py::handle min_prob) {
  thread_local Draft draft;
  SpecRule r;
  py::object refusal;
  const Taken taken = quick_rule(c, max_spec_tokens, factor, offset, min_prob, r, refusal);
  if (taken != Taken::kYes) return taken == Taken::kRefused ? refusal : py::none();
  c.draft(req, r, draft);
  return as_list(draft.token_ids);
}

SpecRule rule(int32_t max_spec_tokens, double factor, double offset, double min_prob) {
  SpecRule r;
  r.max_spec_tokens = max_spec_tokens;
  r.max_spec_factor = factor;
  r.max_spec_offset = offset;
  r.min_token_prob = min_prob;
  return r;
}

}  // namespace

void bind_suffix(py::module_& m) {
  m.def("draft_choice_observe",  // DraftChoice.observe: arrays checked by fastspec/runtime/proposers/draft_choice.py
        [](py::array_t<double, py::array::c_style>& averages, const Array<bool>& mask, const Array<int64_t>& first,
           const Array<int32_t>& first_lens, const Array<int64_t>& second, const Array<int32_t>& second_lens,
           const Array<int64_t>& kept, const Array<int32_t>& kept_num, double rate) {
          const int64_t n = mask.size();
          const bool rows = first.ndim() == 2 && second.ndim() == 2 && kept.ndim() == 2 && first.shape(0) == n &&
                            second.shape(0) == n && kept.shape(0) == n;
          if (averages.size() != 2 * n || first_lens.size() != n || second_lens.size() != n || kept_num.size() != n ||
              !rows) {
            throw std::invalid_argument("draft_choice_observe: arrays disagree on the number of slots");
          }
          fastspec::suffix::draft_choice_observe(averages.mutable_data(), data_of(mask),
                                                 DraftRows{data_of(first), data_of(first_lens), first.shape(1)},
                                                 DraftRows{data_of(second), data_of(second_lens), second.shape(1)},
                                                 DraftRows{data_of(kept), data_of(kept_num), kept.shape(1)}, n, rate);
        });
  py::class_<SuffixCache>(m, "SuffixCacheCore")
      .def(py::init([](int32_t max_depth, int64_t max_cached_requests, int64_t max_token, int32_t max_ngram_size,
                       int32_t min_ngram_size) {
             return std::make_unique<SuffixCache>(max_depth, max_cached_requests, max_token,
                                                  NgramRule{max_ngram_size, min_ngram_size});
           }),
           py::arg("max_depth"), py::arg("max_cached_requests"), py::arg("max_token") = int64_t{INT32_MAX},
           py::arg("max_ngram_size") = 0, py::arg("min_ngram_size") = 1)
      .def("start_request",
           [](SuffixCache& c, int64_t req, const std::vector<int32_t>& prompt) {
             return c.start_request(req, prompt.data(), static_cast<int64_t>(prompt.size()));
           })
      .def("add_active_response",  // True; False: tokens left to Python; a dict: the refusal's record
           [](SuffixCache& c, int64_t req, py::handle token_ids) -> py::object {
             thread_local std::vector<int32_t> tokens;
             py::object refusal;
             const Taken taken = quick_tokens(token_ids, "token_ids", c.max_token(), -1, tokens, refusal);
             if (taken != Taken::kYes) return taken == Taken::kRefused ? refusal : py::bool_(false);
             c.add_active_response(req, tokens.data(), static_cast<int64_t>(tokens.size()));
             return py::bool_(true);
           })
      .def("stop_request", &SuffixCache::stop_request)
      .def("evict_cached_response", &SuffixCache::evict_cached_response)
      .def("speculate", &quick_speculate, py::arg("req"), py::arg("context"), py::arg("max_spec_tokens"),
           py::arg("factor"), py::arg("offset"), py::arg("min_prob"), py::arg("tree_width") = 1,
           py::arg("max_spec_depth") = INT32_MAX)  // None: an argument left to Python; a dict: a refusal
      .def("draft", &quick_draft)  // None: an argument left to Python; a dict: a refusal
      .def(
          "speculate_batch",
          [](const SuffixCache& c, const Array<int64_t>& keys, const Array<int32_t>& max_tokens,
             int32_t max_spec_tokens, double factor, double offset, double min_prob,
             py::array_t<int64_t, py::array::c_style>& out_tokens, py::array_t<int32_t, py::array::c_style>& out_lens,
             py::array_t<float, py::array::c_style>& out_scores, int32_t tree_width, int32_t max_spec_depth,
             bool budget_caps_depth, std::optional<py::array_t<int32_t, py::array::c_style>> out_parents,
             std::optional<py::array_t<float, py::array::c_style>> out_probs) {
            const int64_t n = keys.size();
            const auto same_rows = [&](const auto& a) { return !a || a->size() == out_tokens.size(); };
            if (max_tokens.size() != n || out_lens.size() != n || out_scores.size() != n || out_tokens.ndim() != 2 ||
                out_tokens.shape(0) != n || !same_rows(out_parents) || !same_rows(out_probs)) {
              throw std::invalid_argument("SuffixCache.speculate_batch: arrays disagree on the number of requests");
            }
            SpecRule r = rule(max_spec_tokens, factor, offset, min_prob);
            r.tree_width = tree_width;
            r.max_spec_depth = max_spec_depth;
            r.budget_caps_depth = budget_caps_depth;
            c.speculate_batch(data_of(keys), data_of(max_tokens), n, r, out_tokens.mutable_data(),
                              out_lens.mutable_data(), out_scores.mutable_data(), out_tokens.shape(1),
                              out_parents ? out_parents->mutable_data() : nullptr,
                              out_probs ? out_probs->mutable_data() : nullptr);
          },
          py::arg("keys"), py::arg("max_tokens"), py::arg("max_spec_tokens"), py::arg("factor"), py::arg("offset"),
          py::arg("min_prob"), py::arg("out_tokens"), py::arg("out_lens"), py::arg("out_scores"),
          py::arg("tree_width") = 1, py::arg("max_spec_depth") = INT32_MAX, py::arg("budget_caps_depth") = false,
          py::arg("out_parents") = py::none(), py::arg("out_probs") = py::none())
      .def("extend_batch",
           [](SuffixCache& c, const Array<int64_t>& keys, const Array<int64_t>& tokens, const Array<int32_t>& counts) {
             const int64_t n = keys.size();
             if (counts.size() != n || tokens.ndim() != 2 || tokens.shape(0) != n) {
               throw std::invalid_argument("SuffixCache.extend_batch: arrays disagree on the number of requests");
             }
             c.extend_batch(data_of(keys), data_of(tokens), data_of(counts), n, tokens.shape(1));
           })
      .def("active", &SuffixCache::active)
      .def("cached", &SuffixCache::cached)
      .def("active_requests", &SuffixCache::active_requests)
      .def("cached_requests", &SuffixCache::cached_requests)
      .def("request_tokens", &SuffixCache::request_tokens)
      .def("memory_bytes", &SuffixCache::memory_bytes)
      .def("global_tokens", &SuffixCache::global_tokens)
      .def("global_nodes", &SuffixCache::global_nodes)
      .def_property_readonly("max_depth", &SuffixCache::max_depth)
      .def_property_readonly("max_cached_requests", &SuffixCache::max_cached_requests)
      .def_property_readonly("max_token", &SuffixCache::max_token);
}

}  // namespace fastspec_bindings

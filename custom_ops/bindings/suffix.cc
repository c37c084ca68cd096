// The suffix-decoding host cache (custom_ops/suffix/) as the class
// fastspec_kernels.SuffixCacheCore. fastspec/suffix.py checks every argument
// first: single-request calls pass lists of ints (a few per step: cheaper
// than arrays), batch calls C-contiguous numpy arrays of the dtypes below.
// The cache's own std::invalid_argument (a ValueError here) is a last guard.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "../suffix/suffix_cache.h"
#include "bindings.h"

namespace fastspec_bindings {

namespace {

using fastspec::suffix::Draft;
using fastspec::suffix::SpecRule;
using fastspec::suffix::SuffixCache;

template <typename T>
using Array = py::array_t<T, py::array::c_style | py::array::forcecast>;

template <typename T>
const T* data_of(const Array<T>& a) {
  return a.size() ? a.data() : nullptr;
}

py::tuple as_tuple(const Draft& d) {
  return py::make_tuple(d.token_ids, d.parents, d.probs, d.score, d.match_len);
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
  py::class_<SuffixCache>(m, "SuffixCacheCore")
      .def(py::init<int32_t, int64_t>(), py::arg("max_depth"), py::arg("max_cached_requests"))
      .def("start_request",
           [](SuffixCache& c, int64_t req, const std::vector<int32_t>& prompt) {
             return c.start_request(req, prompt.data(), static_cast<int64_t>(prompt.size()));
           })
      .def("add_active_response",
           [](SuffixCache& c, int64_t req, const std::vector<int32_t>& tokens) {
             c.add_active_response(req, tokens.data(), static_cast<int64_t>(tokens.size()));
           })
      .def("stop_request", &SuffixCache::stop_request)
      .def("evict_cached_response", &SuffixCache::evict_cached_response)
      .def("speculate",
           [](const SuffixCache& c, int64_t req, const std::vector<int32_t>& context, int32_t max_spec_tokens,
              double factor, double offset, double min_prob) {
             return as_tuple(c.speculate(req, context.data(), static_cast<int64_t>(context.size()),
                                         rule(max_spec_tokens, factor, offset, min_prob)));
           })
      .def("speculate_batch",
           [](const SuffixCache& c, const Array<int64_t>& keys, const Array<int32_t>& max_tokens, int32_t max_spec_tokens,
              double factor, double offset, double min_prob, py::array_t<int64_t, py::array::c_style>& out_tokens,
              py::array_t<int32_t, py::array::c_style>& out_lens, py::array_t<float, py::array::c_style>& out_scores) {
             const int64_t n = keys.size();
             if (max_tokens.size() != n || out_lens.size() != n || out_scores.size() != n || out_tokens.ndim() != 2 ||
                 out_tokens.shape(0) != n) {
               throw std::invalid_argument("SuffixCache.speculate_batch: arrays disagree on the number of requests");
             }
             c.speculate_batch(data_of(keys), data_of(max_tokens), n, rule(max_spec_tokens, factor, offset, min_prob),
                               out_tokens.mutable_data(), out_lens.mutable_data(), out_scores.mutable_data(),
                               out_tokens.shape(1));
           })
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
      .def_property_readonly("max_cached_requests", &SuffixCache::max_cached_requests);
}

}  // namespace fastspec_bindings

// Bindings of ngram_match: CPU and CUDA launchers over raw pointers.
#include "bindings.h"
#include "fastspec/ngram_append.h"
#include "fastspec/ngram_match.h"

namespace fastspec_bindings {
namespace {

struct NgramArgs {
  uintptr_t token_ids_all, prompt_lens, step_idx, draft_token_num, draft_tokens,
      seq_lens_this_time, seq_lens_encoder, seq_lens_decoder, max_dec_len;
  int64_t batch, max_model_len, draft_cols;
  int max_ngram_size, min_ngram_size;
  int64_t token_budget;

  fastspec::NgramMatchParams params() const {
    if (max_ngram_size < 1 || min_ngram_size < 1 || min_ngram_size > max_ngram_size) {
      throw std::invalid_argument("ngram_match: need 1 <= min_ngram_size <= max_ngram_size");
    }
    if (batch < 0 || max_model_len < 0 || max_model_len >= (int64_t{1} << 31) || draft_cols < 1) {
      throw std::invalid_argument("ngram_match: sizes out of range");
    }
    return {ptr<const int64_t>(token_ids_all), ptr<const int64_t>(prompt_lens),
            ptr<const int64_t>(step_idx),      ptr<const int32_t>(draft_token_num),
            ptr<int64_t>(draft_tokens),        ptr<int32_t>(seq_lens_this_time),
            ptr<const int32_t>(seq_lens_encoder), ptr<const int32_t>(seq_lens_decoder),
            ptr<const int64_t>(max_dec_len),   batch, max_model_len, draft_cols,
            max_ngram_size, min_ngram_size, token_budget};
  }
};

}  // namespace

void bind_ngram_match(py::module_& m) {
  py::class_<NgramArgs>(m, "NgramArgs")
      .def(py::init<uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t,
                    uintptr_t, uintptr_t, int64_t, int64_t, int64_t, int, int, int64_t>(),
           py::arg("token_ids_all"), py::arg("prompt_lens"), py::arg("step_idx"),
           py::arg("draft_token_num"), py::arg("draft_tokens"), py::arg("seq_lens_this_time"),
           py::arg("seq_lens_encoder"), py::arg("seq_lens_decoder"), py::arg("max_dec_len"),
           py::arg("batch"), py::arg("max_model_len"), py::arg("draft_cols"),
           py::arg("max_ngram_size"), py::arg("min_ngram_size"), py::arg("token_budget"));
  m.def("ngram_match_cpu", [](const NgramArgs& args) {
    const auto params = args.params();
    py::gil_scoped_release release;
    fastspec::ngram_match_cpu(params);
  });
  // ngram_append takes the same arguments (NgramArgs).
  m.def("ngram_append_cpu", [](const NgramArgs& args) {
    const auto params = args.params();
    py::gil_scoped_release release;
    fastspec::ngram_append_cpu(params);
  });
#if defined(FASTSPEC_WITH_CUDA)
  m.def("ngram_match_cuda",
        [](const NgramArgs& args, uintptr_t stream) {
          const auto params = args.params();
          if (params.batch > fastspec::kMaxCudaBatch) throw std::invalid_argument("ngram_match: batch exceeds the CUDA limit");
          check_cuda(fastspec::ngram_match_cuda(params, as_stream(stream)), "ngram_match_cuda");
        },
        py::arg("args"), py::arg("stream") = 0);
  m.def("ngram_append_cuda",
        [](const NgramArgs& args, uintptr_t stream) {
          const auto params = args.params();
          if (params.batch > fastspec::kMaxCudaBatch) throw std::invalid_argument("ngram_append: batch exceeds the CUDA limit");
          check_cuda(fastspec::ngram_append_cuda(params, as_stream(stream)), "ngram_append_cuda");
        },
        py::arg("args"), py::arg("stream") = 0);
#endif
}

}  // namespace fastspec_bindings

// Bindings of update_model_status: CPU and CUDA launchers over raw pointers.
#include "bindings.h"
#include "fastspec/update_model_status.h"

namespace fastspec_bindings {
namespace {

struct UpdateArgs {
  uintptr_t seq_lens_encoder, seq_lens_decoder, seq_lens_this_time, step_idx, stop_flags,
      accept_tokens, accept_num, draft_tokens, token_ids_all, prompt_lens, is_block_step,
      max_dec_len, end_tokens, has_running;
  int64_t batch, draft_cols, max_model_len, num_end_tokens;

  fastspec::UpdateModelStatusParams params() const {
    if (batch < 0 || draft_cols < 1 || max_model_len < 0 || num_end_tokens < 1 || end_tokens == 0 ||
        has_running == 0) {
      throw std::invalid_argument(
          "update_model_status: sizes out of range (need B >= 0, K + 1 >= 1, L >= 0, E >= 1, has_running)");
    }
    return {ptr<int32_t>(seq_lens_encoder), ptr<int32_t>(seq_lens_decoder),
            ptr<int32_t>(seq_lens_this_time), ptr<int64_t>(step_idx), ptr<bool>(stop_flags),
            ptr<int64_t>(accept_tokens), ptr<int32_t>(accept_num), ptr<int64_t>(draft_tokens),
            ptr<int64_t>(token_ids_all), ptr<const int64_t>(prompt_lens),
            ptr<const bool>(is_block_step), ptr<const int64_t>(max_dec_len),
            ptr<const int64_t>(end_tokens), ptr<bool>(has_running), batch, draft_cols,
            max_model_len, num_end_tokens};
  }
};

}  // namespace

void bind_update_model_status(py::module_& m) {
  py::class_<UpdateArgs>(m, "UpdateArgs")
      .def(py::init<uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t,
                    uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t,
                    int64_t, int64_t, int64_t, int64_t>(),
           py::arg("seq_lens_encoder"), py::arg("seq_lens_decoder"), py::arg("seq_lens_this_time"),
           py::arg("step_idx"), py::arg("stop_flags"), py::arg("accept_tokens"),
           py::arg("accept_num"), py::arg("draft_tokens"), py::arg("token_ids_all"),
           py::arg("prompt_lens"), py::arg("is_block_step"), py::arg("max_dec_len"),
           py::arg("end_tokens"), py::arg("has_running"), py::arg("batch"), py::arg("draft_cols"),
           py::arg("max_model_len"), py::arg("num_end_tokens"));
  m.def("update_model_status_cpu", [](const UpdateArgs& args) {
    const auto params = args.params();
    py::gil_scoped_release release;
    fastspec::update_model_status_cpu(params);
  });
#if defined(FASTSPEC_WITH_CUDA)
  m.def("update_model_status_cuda",
        [](const UpdateArgs& args, uintptr_t stream) {
          const auto params = args.params();
          if (params.batch > fastspec::kMaxCudaBatch) {
            throw std::invalid_argument("update_model_status: batch exceeds the CUDA limit of " +
                                        std::to_string(fastspec::kMaxCudaBatch));
          }
          check_cuda(fastspec::update_model_status_cuda(params, as_stream(stream)), "update_model_status_cuda");
        },
        py::arg("args"), py::arg("stream") = 0);
#endif
}

}  // namespace fastspec_bindings

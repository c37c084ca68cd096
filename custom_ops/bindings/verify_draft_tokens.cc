// Bindings of verify_draft_tokens: CPU and CUDA launchers over raw pointers.
// Optional tensors are passed as address 0.
#include "bindings.h"
#include "fastspec/verify_draft_tokens.h"

namespace fastspec_bindings {
namespace {

struct VerifyArgs {
  uintptr_t accept_tokens, accept_num, draft_tokens, target_tokens, candidate_ids,
      candidate_scores, candidate_lens, seed, step_idx, stop_flags, is_block_step,
      seq_lens_encoder, seq_lens_this_time, cu_seqlens_q_output, reasoning_status, max_dec_len,
      end_tokens;
  int64_t batch, draft_cols, rows, candidate_cols, num_end_tokens;
  int strategy;
  bool accept_all, reject_all;
  // REJECTION: [T, V] probability rows (dtype tag as in sampling: PROB_F32/F16/BF16)
  uintptr_t target_probs = 0, draft_probs = 0;
  int probs_dtype = 0;
  int64_t vocab = 0;

  fastspec::VerifyDraftTokensParams params() const {
    if (strategy != fastspec::kVerifyTopp && strategy != fastspec::kVerifyGreedy &&
        strategy != fastspec::kVerifyTargetMatch && strategy != fastspec::kVerifyRejection) {
      throw std::invalid_argument("verify_draft_tokens: unknown strategy " + std::to_string(strategy));
    }
    if (batch < 0 || draft_cols < 1 || rows < 0 || num_end_tokens < 1 || end_tokens == 0) {
      throw std::invalid_argument("verify_draft_tokens: sizes out of range (need B >= 0, K + 1 >= 1, E >= 1)");
    }
    // An empty tensor may have address 0 (torch): pointers are needed only when T > 0.
    if (strategy == fastspec::kVerifyTopp && rows > 0 &&
        (candidate_ids == 0 || candidate_scores == 0 || candidate_lens == 0 || candidate_cols < 1)) {
      throw std::invalid_argument("verify_draft_tokens: TOPP needs candidate_ids, candidate_scores, candidate_lens");
    }
    if (strategy == fastspec::kVerifyRejection && rows > 0 &&
        (target_probs == 0 || draft_probs == 0 || vocab < 1 ||
         (probs_dtype != fastspec::kProbF32 && probs_dtype != fastspec::kProbF16 && probs_dtype != fastspec::kProbBF16))) {
      throw std::invalid_argument("verify_draft_tokens: REJECTION needs target_probs and draft_probs [T, V], V >= 1, f32/f16/bf16");
    }
    if ((strategy == fastspec::kVerifyGreedy || strategy == fastspec::kVerifyTargetMatch) && rows > 0 && target_tokens == 0) {
      throw std::invalid_argument("verify_draft_tokens: GREEDY / TARGET_MATCH need target_tokens");
    }
    fastspec::VerifyDraftTokensParams p{};
    p.accept_tokens = ptr<int64_t>(accept_tokens);
    p.accept_num = ptr<int32_t>(accept_num);
    p.draft_tokens = ptr<const int64_t>(draft_tokens);
    p.target_tokens = ptr<const int64_t>(target_tokens);
    p.candidate_ids = ptr<const int64_t>(candidate_ids);
    p.candidate_scores = ptr<const float>(candidate_scores);
    p.candidate_lens = ptr<const int32_t>(candidate_lens);
    p.seed = ptr<const int64_t>(seed);
    p.step_idx = ptr<const int64_t>(step_idx);
    p.stop_flags = ptr<const bool>(stop_flags);
    p.is_block_step = ptr<const bool>(is_block_step);
    p.seq_lens_encoder = ptr<const int32_t>(seq_lens_encoder);
    p.seq_lens_this_time = ptr<const int32_t>(seq_lens_this_time);
    p.cu_seqlens_q_output = ptr<const int32_t>(cu_seqlens_q_output);
    p.reasoning_status = ptr<const int32_t>(reasoning_status);
    p.max_dec_len = ptr<const int64_t>(max_dec_len);
    p.end_tokens = ptr<const int64_t>(end_tokens);
    p.batch = batch;
    p.draft_cols = draft_cols;
    p.rows = rows;
    p.candidate_cols = candidate_cols;
    p.num_end_tokens = num_end_tokens;
    p.strategy = strategy;
    p.accept_all = accept_all;
    p.reject_all = reject_all;
    p.rejection = {ptr<const void>(target_probs), ptr<const void>(draft_probs), probs_dtype, vocab};
    return p;
  }
};

}  // namespace

void bind_verify_draft_tokens(py::module_& m) {
  py::class_<VerifyArgs>(m, "VerifyArgs")
      .def(py::init<uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t,
                    uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t,
                    uintptr_t, uintptr_t, uintptr_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                    int, bool, bool>(),
           py::arg("accept_tokens"), py::arg("accept_num"), py::arg("draft_tokens"),
           py::arg("target_tokens"), py::arg("candidate_ids"), py::arg("candidate_scores"),
           py::arg("candidate_lens"), py::arg("seed"), py::arg("step_idx"), py::arg("stop_flags"),
           py::arg("is_block_step"), py::arg("seq_lens_encoder"), py::arg("seq_lens_this_time"),
           py::arg("cu_seqlens_q_output"), py::arg("reasoning_status"), py::arg("max_dec_len"),
           py::arg("end_tokens"), py::arg("batch"), py::arg("draft_cols"), py::arg("rows"),
           py::arg("candidate_cols"), py::arg("num_end_tokens"), py::arg("strategy"),
           py::arg("accept_all"), py::arg("reject_all"))
      .def_readwrite("target_probs", &VerifyArgs::target_probs)
      .def_readwrite("draft_probs", &VerifyArgs::draft_probs)
      .def_readwrite("probs_dtype", &VerifyArgs::probs_dtype)
      .def_readwrite("vocab", &VerifyArgs::vocab);
  m.attr("VERIFY_TOPP") = static_cast<int>(fastspec::kVerifyTopp);
  m.attr("VERIFY_GREEDY") = static_cast<int>(fastspec::kVerifyGreedy);
  m.attr("VERIFY_TARGET_MATCH") = static_cast<int>(fastspec::kVerifyTargetMatch);
  m.attr("VERIFY_REJECTION") = static_cast<int>(fastspec::kVerifyRejection);
  m.def("verify_draft_tokens_cpu", [](const VerifyArgs& args) {
    const auto params = args.params();
    py::gil_scoped_release release;
    fastspec::verify_draft_tokens_cpu(params);
  });
#if defined(FASTSPEC_WITH_CUDA)
  m.def("verify_draft_tokens_cuda",
        [](const VerifyArgs& args, uintptr_t stream) {
          const auto params = args.params();
          if (params.batch > fastspec::kMaxCudaBatch) {
            throw std::invalid_argument("verify_draft_tokens: batch exceeds the CUDA limit of " +
                                        std::to_string(fastspec::kMaxCudaBatch));
          }
          check_cuda(fastspec::verify_draft_tokens_cuda(params, as_stream(stream)), "verify_draft_tokens_cuda");
        },
        py::arg("args"), py::arg("stream") = 0);
#endif
}

}  // namespace fastspec_bindings

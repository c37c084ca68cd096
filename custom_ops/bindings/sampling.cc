// Bindings of top_p_candidates and sample_tokens: CPU and CUDA launchers over
// raw pointers. The caller provides every output buffer.
#include "bindings.h"
#include "fastspec/sampling.h"

namespace fastspec_bindings {
namespace {

void check_sizes(int64_t rows, int64_t vocab, int64_t batch, int32_t dtype, const char* op) {
  if (fastspec::check_sampling_sizes(rows, vocab, batch, dtype) != fastspec::kOk) {
    throw std::invalid_argument(std::string(op) + ": sizes or probs dtype out of range");
  }
}

fastspec::TopPCandidatesParams candidates_params(uintptr_t probs, int32_t probs_dtype, uintptr_t top_p,
                                                 uintptr_t batch_id, uintptr_t ids, uintptr_t scores,
                                                 uintptr_t lens, int64_t rows, int64_t vocab,
                                                 int64_t batch, int32_t max_candidate_len,
                                                 int32_t num_threads) {
  check_sizes(rows, vocab, batch, probs_dtype, "top_p_candidates");
  if (max_candidate_len < 1 || max_candidate_len > fastspec::kMaxCandidateLen || max_candidate_len > vocab) {
    throw std::invalid_argument("top_p_candidates: max_candidate_len must be in [1, min(V, 1024)]");
  }
  fastspec::TopPCandidatesParams p{};
  p.probs = ptr<const void>(probs);
  p.probs_dtype = probs_dtype;
  p.top_p = ptr<const float>(top_p);
  p.batch_id_per_token_output = ptr<const int32_t>(batch_id);
  p.candidate_ids = ptr<int64_t>(ids);
  p.candidate_scores = ptr<float>(scores);
  p.candidate_lens = ptr<int32_t>(lens);
  p.rows = rows;
  p.vocab = vocab;
  p.batch = batch;
  p.max_candidate_len = max_candidate_len;
  p.num_threads = num_threads;
  return p;
}

fastspec::SampleTokensParams sample_params(uintptr_t probs, int32_t probs_dtype, uintptr_t top_p,
                                           uintptr_t top_k, uintptr_t seed, uintptr_t step_idx,
                                           uintptr_t batch_id, uintptr_t cu_seqlens, uintptr_t tokens,
                                           int64_t rows, int64_t vocab, int64_t batch,
                                           int32_t num_threads, int64_t rand_stream) {
  check_sizes(rows, vocab, batch, probs_dtype, "sample_tokens");
  if (rand_stream < 0 || rand_stream > 0xffffffffLL ||
      !fastspec::sample_stream_ok(static_cast<uint32_t>(rand_stream))) {
    throw std::invalid_argument("sample_tokens: rand_stream (the random stream) must be TARGET (1) or DRAFT (5), got " +
                                std::to_string(rand_stream));
  }
  fastspec::SampleTokensParams p{};
  p.probs = ptr<const void>(probs);
  p.probs_dtype = probs_dtype;
  p.top_p = ptr<const float>(top_p);
  p.top_k = ptr<const int32_t>(top_k);
  p.seed = ptr<const int64_t>(seed);
  p.step_idx = ptr<const int64_t>(step_idx);
  p.batch_id_per_token_output = ptr<const int32_t>(batch_id);
  p.cu_seqlens_q_output = ptr<const int32_t>(cu_seqlens);
  p.tokens = ptr<int64_t>(tokens);
  p.rows = rows;
  p.vocab = vocab;
  p.batch = batch;
  p.num_threads = num_threads;
  p.stream = static_cast<uint32_t>(rand_stream);
  return p;
}

}  // namespace

void bind_sampling(py::module_& m) {
  m.attr("PROB_F32") = static_cast<int>(fastspec::kProbF32);
  m.attr("PROB_F16") = static_cast<int>(fastspec::kProbF16);
  m.attr("PROB_BF16") = static_cast<int>(fastspec::kProbBF16);
  m.def("f16_to_f32_bits", &fastspec::f16_to_f32_bits);
  m.def("mass_of_bits", &fastspec::mass_of_bits);
  m.def("top_p_candidates_cpu",
        [](uintptr_t probs, int32_t probs_dtype, uintptr_t top_p, uintptr_t batch_id, uintptr_t ids,
           uintptr_t scores, uintptr_t lens, int64_t rows, int64_t vocab, int64_t batch,
           int32_t max_candidate_len, int32_t num_threads) {
          const auto p = candidates_params(probs, probs_dtype, top_p, batch_id, ids, scores, lens, rows,
                                           vocab, batch, max_candidate_len, num_threads);
          py::gil_scoped_release release;
          fastspec::top_p_candidates_cpu(p);
        },
        py::arg("probs"), py::arg("probs_dtype"), py::arg("top_p"), py::arg("batch_id_per_token_output"),
        py::arg("candidate_ids"), py::arg("candidate_scores"), py::arg("candidate_lens"), py::arg("rows"),
        py::arg("vocab"), py::arg("batch"), py::arg("max_candidate_len"), py::arg("num_threads") = 0);
  m.def("sample_tokens_cpu",
        [](uintptr_t probs, int32_t probs_dtype, uintptr_t top_p, uintptr_t top_k, uintptr_t seed,
           uintptr_t step_idx, uintptr_t batch_id, uintptr_t cu_seqlens, uintptr_t tokens, int64_t rows,
           int64_t vocab, int64_t batch, int32_t num_threads, int64_t rand_stream) {
          const auto p = sample_params(probs, probs_dtype, top_p, top_k, seed, step_idx, batch_id,
                                       cu_seqlens, tokens, rows, vocab, batch, num_threads, rand_stream);
          py::gil_scoped_release release;
          fastspec::sample_tokens_cpu(p);
        },
        py::arg("probs"), py::arg("probs_dtype"), py::arg("top_p"), py::arg("top_k"), py::arg("seed"),
        py::arg("step_idx"), py::arg("batch_id_per_token_output"), py::arg("cu_seqlens_q_output"),
        py::arg("tokens"), py::arg("rows"), py::arg("vocab"), py::arg("batch"), py::arg("num_threads") = 0,
        py::arg("rand_stream") = static_cast<int64_t>(fastspec::kStreamTarget));
#if defined(FASTSPEC_WITH_CUDA)
  m.def("top_p_candidates_cuda",
        [](uintptr_t probs, int32_t probs_dtype, uintptr_t top_p, uintptr_t batch_id, uintptr_t ids,
           uintptr_t scores, uintptr_t lens, int64_t rows, int64_t vocab, int64_t batch,
           int32_t max_candidate_len, uintptr_t stream) {
          const auto p = candidates_params(probs, probs_dtype, top_p, batch_id, ids, scores, lens, rows,
                                           vocab, batch, max_candidate_len, 0);
          check_cuda(fastspec::top_p_candidates_cuda(p, as_stream(stream)), "top_p_candidates_cuda");
        },
        py::arg("probs"), py::arg("probs_dtype"), py::arg("top_p"), py::arg("batch_id_per_token_output"),
        py::arg("candidate_ids"), py::arg("candidate_scores"), py::arg("candidate_lens"), py::arg("rows"),
        py::arg("vocab"), py::arg("batch"), py::arg("max_candidate_len"), py::arg("stream") = 0);
  m.def("sample_tokens_cuda",
        [](uintptr_t probs, int32_t probs_dtype, uintptr_t top_p, uintptr_t top_k, uintptr_t seed,
           uintptr_t step_idx, uintptr_t batch_id, uintptr_t cu_seqlens, uintptr_t tokens, int64_t rows,
           int64_t vocab, int64_t batch, uintptr_t stream, int64_t rand_stream) {
          const auto p = sample_params(probs, probs_dtype, top_p, top_k, seed, step_idx, batch_id,
                                       cu_seqlens, tokens, rows, vocab, batch, 0, rand_stream);
          check_cuda(fastspec::sample_tokens_cuda(p, as_stream(stream)), "sample_tokens_cuda");
        },
        py::arg("probs"), py::arg("probs_dtype"), py::arg("top_p"), py::arg("top_k"), py::arg("seed"),
        py::arg("step_idx"), py::arg("batch_id_per_token_output"), py::arg("cu_seqlens_q_output"),
        py::arg("tokens"), py::arg("rows"), py::arg("vocab"), py::arg("batch"), py::arg("stream") = 0,
        py::arg("rand_stream") = static_cast<int64_t>(fastspec::kStreamTarget));
#endif
}

}  // namespace fastspec_bindings

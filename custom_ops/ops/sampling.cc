// top_p_candidates, sample_tokens and top_k_top_p_probs: an OpCall to their
// parameter structs, and each backend's launcher.
#include "emulation/launchers.h"
#include "fastspec/op_call.h"
#include "fastspec/op_schema.h"
#include "fastspec/sampling.h"
#include "prob_dtype.h"

namespace fastspec {
namespace {

// The fields the three ops' parameters share, from the schema indices of their
// probs, top_p and batch_id_per_token_output tensors.
template <typename Params>
Params row_params(const OpCall& c, int probs, int top_p, int batch_id) {
  Params p{};
  p.probs = c.data<const void>(probs);
  p.probs_dtype = prob_dtype(c.tensor(probs).dtype);
  p.top_p = c.data<const float>(top_p);
  p.batch_id_per_token_output = c.data<const int32_t>(batch_id);
  p.rows = c.size(probs, 0);
  p.vocab = c.size(probs, 1);
  p.batch = c.size(top_p, 0);
  p.num_threads = c.num_threads;
  return p;
}

TopPCandidatesParams candidates_params(const OpCall& c) {
  namespace a = arg::top_p_candidates;
  auto p = row_params<TopPCandidatesParams>(c, a::probs, a::top_p, a::batch_id_per_token_output);
  p.candidate_ids = c.data<int64_t>(a::candidate_ids);
  p.candidate_scores = c.data<float>(a::candidate_scores);
  p.candidate_lens = c.data<int32_t>(a::candidate_lens);
  p.max_candidate_len = static_cast<int32_t>(c.attr(attr::top_p_candidates::max_candidate_len));
  return p;
}

SampleTokensParams sample_params(const OpCall& c) {
  namespace a = arg::sample_tokens;
  auto p = row_params<SampleTokensParams>(c, a::probs, a::top_p, a::batch_id_per_token_output);
  p.top_k = c.data<const int32_t>(a::top_k);
  p.seed = c.data<const int64_t>(a::seed);
  p.step_idx = c.data<const int64_t>(a::step_idx);
  p.cu_seqlens_q_output = c.data<const int32_t>(a::cu_seqlens_q_output);
  p.tokens = c.data<int64_t>(a::tokens);
  p.stream = static_cast<uint32_t>(c.attr(attr::sample_tokens::rand_stream));
  return p;
}

TopKTopPProbsParams probs_params(const OpCall& c) {
  namespace a = arg::top_k_top_p_probs;
  auto p = row_params<TopKTopPProbsParams>(c, a::probs, a::top_p, a::batch_id_per_token_output);
  p.top_k = c.data<const int32_t>(a::top_k);
  p.target_probs = c.data<float>(a::target_probs);
  return p;
}

}  // namespace

FASTSPEC_REGISTER(top_p_candidates, kCpu, [](const OpCall& c) { return top_p_candidates_cpu(candidates_params(c)); });
FASTSPEC_REGISTER(sample_tokens, kCpu, [](const OpCall& c) { return sample_tokens_cpu(sample_params(c)); });
FASTSPEC_REGISTER(top_k_top_p_probs, kCpu, [](const OpCall& c) { return top_k_top_p_probs_cpu(probs_params(c)); });
// The XPU kernels: emulated on the host, or real under XTDK (custom_ops/xpu).
FASTSPEC_REGISTER(top_p_candidates, kXpu, [](const OpCall& c) { return top_p_candidates_xpu(candidates_params(c), c.xpu()); });
FASTSPEC_REGISTER(sample_tokens, kXpu, [](const OpCall& c) { return sample_tokens_xpu(sample_params(c), c.xpu()); });
FASTSPEC_REGISTER(top_k_top_p_probs, kXpu,
                  [](const OpCall& c) { return top_k_top_p_probs_xpu(probs_params(c), c.xpu()); });
// The CUDA kernels on the host emulation of a CUDA device (custom_ops/cuda/emulation).
FASTSPEC_REGISTER(top_p_candidates, kCudaEmulator, [](const OpCall& c) { return cuda_emulated(c, [&] { return top_p_candidates_cuda_emulated(candidates_params(c), nullptr); }); });
FASTSPEC_REGISTER(sample_tokens, kCudaEmulator, [](const OpCall& c) { return cuda_emulated(c, [&] { return sample_tokens_cuda_emulated(sample_params(c), nullptr); }); });
FASTSPEC_REGISTER(top_k_top_p_probs, kCudaEmulator, [](const OpCall& c) { return cuda_emulated(c, [&] { return top_k_top_p_probs_cuda_emulated(probs_params(c), nullptr); }); });
#if defined(FASTSPEC_WITH_CUDA)
FASTSPEC_REGISTER(top_p_candidates, kCuda, [](const OpCall& c) {
  return static_cast<int>(top_p_candidates_cuda(candidates_params(c), static_cast<cudaStream_t>(c.stream)));
});
FASTSPEC_REGISTER(sample_tokens, kCuda, [](const OpCall& c) {
  return static_cast<int>(sample_tokens_cuda(sample_params(c), static_cast<cudaStream_t>(c.stream)));
});
FASTSPEC_REGISTER(top_k_top_p_probs, kCuda, [](const OpCall& c) {
  return static_cast<int>(top_k_top_p_probs_cuda(probs_params(c), static_cast<cudaStream_t>(c.stream)));
});
#endif

}  // namespace fastspec

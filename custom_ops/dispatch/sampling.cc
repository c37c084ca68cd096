// top_p_candidates, sample_tokens and top_k_top_p_probs on every backend
// (docs/ops/sampling.md). The CPU kernels also take the call's thread count.
#include "emulation/launchers.h"  // the emulated CUDA launchers FASTSPEC_REGISTER_OP registers
#include "fastspec/params/sample_tokens.h"
#include "fastspec/params/top_k_top_p_probs.h"
#include "fastspec/params/top_p_candidates.h"

namespace fastspec {
namespace {

template <typename Params, Params (*build)(const OpCall&)>
Params with_threads(const OpCall& call) {
  Params params = build(call);
  params.num_threads = call.num_threads;
  return params;
}

}  // namespace

FASTSPEC_REGISTER_OP(top_p_candidates, (with_threads<TopPCandidatesParams, top_p_candidates_params>));
FASTSPEC_REGISTER_OP(sample_tokens, (with_threads<SampleTokensParams, sample_tokens_params>));
FASTSPEC_REGISTER_OP(top_k_top_p_probs, (with_threads<TopKTopPProbsParams, top_k_top_p_probs_params>));

}  // namespace fastspec

// verify_draft_tokens: an OpCall to VerifyDraftTokensParams, and each
// backend's launcher. The rows T come from the tensors the strategy reads;
// an absent one (Paddle passes an empty optional tensor as absent) means T = 0.
#include "emulation/launchers.h"
#include "fastspec/op_call.h"
#include "fastspec/op_schema.h"
#include "fastspec/sampling.h"
#include "fastspec/verify_draft_tokens.h"
#include "prob_dtype.h"

namespace fastspec {
namespace {

namespace a = arg::verify_draft_tokens;
namespace at = attr::verify_draft_tokens;

static_assert(at::strategy_topp == kVerifyTopp && at::strategy_greedy == kVerifyGreedy &&
                  at::strategy_target_match == kVerifyTargetMatch && at::strategy_rejection == kVerifyRejection,
              "the schema's strategy order is the kernels' VerifyStrategy");

VerifyDraftTokensParams verify_params(const OpCall& c) {
  VerifyDraftTokensParams p{};
  p.accept_tokens = c.data<int64_t>(a::accept_tokens);
  p.accept_num = c.data<int32_t>(a::accept_num);
  p.draft_tokens = c.data<const int64_t>(a::draft_tokens);
  p.target_tokens = c.data<const int64_t>(a::target_tokens);
  p.candidate_ids = c.data<const int64_t>(a::candidate_ids);
  p.candidate_scores = c.data<const float>(a::candidate_scores);
  p.candidate_lens = c.data<const int32_t>(a::candidate_lens);
  p.seed = c.data<const int64_t>(a::seed);
  p.step_idx = c.data<const int64_t>(a::step_idx);
  p.stop_flags = c.data<const bool>(a::stop_flags);
  p.is_block_step = c.data<const bool>(a::is_block_step);
  p.seq_lens_encoder = c.data<const int32_t>(a::seq_lens_encoder);
  p.seq_lens_this_time = c.data<const int32_t>(a::seq_lens_this_time);
  p.cu_seqlens_q_output = c.data<const int32_t>(a::cu_seqlens_q_output);
  p.reasoning_status = c.data<const int32_t>(a::reasoning_status);
  p.max_dec_len = c.data<const int64_t>(a::max_dec_len);
  p.end_tokens = c.data<const int64_t>(a::end_tokens);
  p.batch = c.size(a::accept_tokens, 0);
  p.draft_cols = c.size(a::accept_tokens, 1);
  p.num_end_tokens = c.size(a::end_tokens, 0);
  p.strategy = static_cast<int32_t>(c.attr(at::strategy));
  p.accept_all = c.attr(at::accept_all) != 0;
  p.reject_all = c.attr(at::reject_all) != 0;
  switch (p.strategy) {
    case kVerifyTopp:
      if (c.tensor(a::candidate_ids).present && c.tensor(a::candidate_scores).present &&
          c.tensor(a::candidate_lens).present) {
        p.rows = c.size(a::candidate_ids, 0);
        p.candidate_cols = c.size(a::candidate_ids, 1);
      }
      break;
    case kVerifyRejection:
      if (c.tensor(a::target_probs).present && c.tensor(a::draft_probs).present) {
        p.rows = c.size(a::target_probs, 0);
        p.rejection = {c.data<const void>(a::target_probs), c.data<const void>(a::draft_probs),
                       prob_dtype(c.tensor(a::target_probs).dtype), c.size(a::target_probs, 1)};
      }
      break;
    default:
      if (c.tensor(a::target_tokens).present) p.rows = c.size(a::target_tokens, 0);
  }
  return p;
}

}  // namespace

FASTSPEC_REGISTER(verify_draft_tokens, kCpu, [](const OpCall& c) { return verify_draft_tokens_cpu(verify_params(c)); });
// The XPU kernels: emulated on the host, or real under XTDK (custom_ops/xpu).
FASTSPEC_REGISTER(verify_draft_tokens, kXpu, [](const OpCall& c) { return verify_draft_tokens_xpu(verify_params(c), c.xpu()); });
// The CUDA kernels on the host emulation of a CUDA device (custom_ops/cuda/emulation).
FASTSPEC_REGISTER(verify_draft_tokens, kCudaEmulator, [](const OpCall& c) { return cuda_emulated(c, [&] { return verify_draft_tokens_cuda_emulated(verify_params(c), nullptr); }); });
#if defined(FASTSPEC_WITH_CUDA)
FASTSPEC_REGISTER(verify_draft_tokens, kCuda, [](const OpCall& c) {
  return static_cast<int>(verify_draft_tokens_cuda(verify_params(c), static_cast<cudaStream_t>(c.stream)));
});
#endif

}  // namespace fastspec

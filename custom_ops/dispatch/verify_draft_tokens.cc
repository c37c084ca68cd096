// verify_draft_tokens on every backend (docs/ops/verify_draft_tokens.md). The
// rows T (and Kc, V) come from the tensors the strategy reads; an absent one
// (Paddle passes an empty optional tensor as absent) means T = 0.
#include "emulation/launchers.h"  // the emulated CUDA launchers FASTSPEC_REGISTER_OP registers
#include "fastspec/params/verify_draft_tokens.h"

namespace fastspec {
namespace {

namespace args = arg::verify_draft_tokens;
namespace attrs = attr::verify_draft_tokens;

static_assert(attrs::strategy_topp == kVerifyTopp && attrs::strategy_greedy == kVerifyGreedy &&
                  attrs::strategy_target_match == kVerifyTargetMatch && attrs::strategy_rejection == kVerifyRejection &&
                  attrs::strategy_block == kVerifyBlock,
              "the schema's strategy order is the kernels' VerifyStrategy");

bool present(const OpCall& call, int index) { return call.tensor(index).present; }

VerifyDraftTokensParams verify_params(const OpCall& call) {
  VerifyDraftTokensParams params = verify_draft_tokens_params(call);
  switch (params.strategy) {
    case kVerifyTopp:
      if (present(call, args::candidate_ids) && present(call, args::candidate_scores) &&
          present(call, args::candidate_lens)) {
        params.rows = call.size(args::candidate_ids, 0);
        params.candidate_cols = call.size(args::candidate_ids, 1);
      }
      break;
    case kVerifyRejection:
    case kVerifyBlock:
      if (present(call, args::target_probs) && present(call, args::draft_probs)) {
        params.rows = call.size(args::target_probs, 0);
        params.vocab = call.size(args::target_probs, 1);
      }
      break;
    default:
      if (present(call, args::target_tokens)) params.rows = call.size(args::target_tokens, 0);
  }
  return params;
}

}  // namespace

FASTSPEC_REGISTER_OP(verify_draft_tokens, verify_params);

}  // namespace fastspec

// build_draft_tree and verify_draft_tree on every backend (docs/ops/draft_tree.md).
#include "emulation/launchers.h"  // the emulated CUDA launchers FASTSPEC_REGISTER_OP registers
#include "fastspec/params/build_draft_tree.h"
#include "fastspec/params/verify_draft_tree.h"

namespace fastspec {

namespace {

namespace args = arg::verify_draft_tree;

static_assert(attr::verify_draft_tree::strategy_greedy == kTreeGreedy &&
                  attr::verify_draft_tree::strategy_target_match == kTreeTargetMatch &&
                  attr::verify_draft_tree::strategy_rejection == kTreeRejection,
              "the schema's strategy order is the kernels' TreeStrategy");

// The rows T (and V) come from the tensors the strategy reads; an absent one
// (Paddle passes an empty optional tensor as absent) means T = 0.
VerifyDraftTreeParams verify_tree_params(const OpCall& call) {
  VerifyDraftTreeParams params = verify_draft_tree_params(call);
  if (params.strategy == kTreeRejection) {
    if (call.tensor(args::target_probs).present && call.tensor(args::draft_probs).present) {
      params.rows = call.size(args::target_probs, 0);
      params.vocab = call.size(args::target_probs, 1);
    }
  } else if (call.tensor(args::target_tokens).present) {
    params.rows = call.size(args::target_tokens, 0);
  }
  return params;
}

}  // namespace

FASTSPEC_REGISTER_OP(build_draft_tree, build_draft_tree_params);
FASTSPEC_REGISTER_OP(verify_draft_tree, verify_tree_params);

}  // namespace fastspec

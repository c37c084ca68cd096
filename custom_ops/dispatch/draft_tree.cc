// build_draft_tree and verify_draft_tree on every backend (docs/ops/draft_tree.md).
#include "emulation/launchers.h"  // the emulated CUDA launchers FASTSPEC_REGISTER_OP registers
#include "fastspec/params/build_draft_tree.h"
#include "fastspec/params/verify_draft_tree.h"

namespace fastspec {

static_assert(attr::verify_draft_tree::strategy_greedy == kTreeGreedy &&
                  attr::verify_draft_tree::strategy_target_match == kTreeTargetMatch,
              "the schema's strategy order is the kernels' TreeStrategy");

FASTSPEC_REGISTER_OP(build_draft_tree, build_draft_tree_params);
FASTSPEC_REGISTER_OP(verify_draft_tree, verify_draft_tree_params);

}  // namespace fastspec

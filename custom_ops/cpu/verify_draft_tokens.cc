// verify_draft_tokens on the CPU: the shared per-slot rule, threads across
// slots once the batch is large enough to pay for a thread team.
#include "fastspec/verify_draft_tokens.h"

namespace fastspec {
namespace {

constexpr int64_t kParallelSlots = 512;

}  // namespace

int verify_draft_tokens_cpu(const VerifyDraftTokensParams& a) {
  if (a.strategy != kVerifyTopp && a.strategy != kVerifyGreedy && a.strategy != kVerifyTargetMatch) {
    return kInvalidArgument;
  }
#pragma omp parallel for schedule(static) if (a.batch >= kParallelSlots)
  for (int64_t b = 0; b < a.batch; ++b) verify_slot(a, b);
  return kOk;
}

}  // namespace fastspec

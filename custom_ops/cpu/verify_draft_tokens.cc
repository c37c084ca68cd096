// verify_draft_tokens on the CPU: the shared per-slot rule. A slot costs tens
// of nanoseconds, so only very large batches are split across the pool.
#include "fastspec/verify_draft_tokens.h"

#include "fastspec/parallel.h"

namespace fastspec {

int verify_draft_tokens_cpu(const VerifyDraftTokensParams& a) {
  if (!verify_strategy_ok(a.strategy)) return kInvalidArgument;
  const auto run = [&a](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) verify_slot(a, b);
  };
  for_verify_slots(a.batch, verify_reads_probs(a.strategy), a.vocab, run);  // REJECTION, BLOCK: whole rows
  return kOk;
}

}  // namespace fastspec

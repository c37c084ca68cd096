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
  // REJECTION and BLOCK read whole rows (V entries) per slot: worth threads far sooner.
  const bool rows_heavy = verify_reads_probs(a.strategy);
  const int64_t work = rows_heavy ? a.batch * max64(a.vocab, 1) : a.batch;
  if (work >= (rows_heavy ? int64_t{1} << 20 : kParallelSlots)) {
    parallel_for(a.batch, rows_heavy ? 1 : kSlotGrain, run);
  } else {
    run(0, a.batch);
  }
  return kOk;
}

}  // namespace fastspec

// build_draft_tree and verify_draft_tree on the CPU: the shared per-slot rules
// (draft_tree.h), threads across slots for large batches.
#include "fastspec/draft_tree.h"

#include "fastspec/parallel.h"

namespace fastspec {

int build_draft_tree_cpu(const BuildDraftTreeParams& a) {
  if (!build_tree_sizes_ok(a)) return kInvalidArgument;
  const auto run = [&a](int64_t begin, int64_t end) {
    int16_t node_of[kMaxTreeCandidates];
    for (int64_t b = begin; b < end; ++b) build_tree_slot_in_memory(a, b, node_of);
  };
  // A slot scans its C candidates once per node: N * C steps.
  if (a.batch * a.tree_cols * a.candidate_count >= (int64_t{1} << 20)) {
    parallel_for(a.batch, 1, run);
  } else {
    run(0, a.batch);
  }
  return kOk;
}

int verify_draft_tree_cpu(const VerifyDraftTreeParams& a) {
  if (!verify_tree_sizes_ok(a)) return kInvalidArgument;
  const auto run = [&a](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) verify_tree_slot_with(a, b, TreeRowsInMemory{});
  };
  for_verify_slots(a.batch, a.strategy == kTreeRejection, a.vocab, run);  // REJECTION: whole rows
  return kOk;
}

}  // namespace fastspec

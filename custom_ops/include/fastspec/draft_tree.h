// build_draft_tree and verify_draft_tree: parameters, the per-slot rules every
// backend shares, and the launcher declarations. The layout is docs/trees.md,
// the semantics docs/ops/draft_tree.md (fastspec/reference/trees.py).
//
// Slots are independent, so every backend runs the per-slot rule once per
// slot: CPU threads across slots, one CUDA thread per slot, one XPU core per
// slot. How a rule reads a slot's candidates or target rows is a template
// argument, so the XPU kernels can stream them from global memory.
#pragma once

#include <cstdint>

#include "fastspec/common.h"
#include "fastspec/multidraft.h"
#include "fastspec/rejection.h"
#include "fastspec/verify_slot.h"

namespace fastspec {

constexpr int64_t kMaxTreeNodes = 128;        // N (fastspec/core/schema.py MAX_TREE_NODES)
constexpr int64_t kMaxTreeCandidates = 1024;  // C (MAX_TREE_CANDIDATES)
static_assert(kMaxNodeTries == kMaxTreeNodes - 1, "TreeTries holds one total per child of a node");

// Fields named as the schema's arguments, filled by the generated build_draft_tree_params(call).
struct BuildDraftTreeParams {
  const int64_t* candidate_tokens;   // [B, C] int64, -1 for none
  const int32_t* candidate_parents;  // [B, C] int32: an earlier candidate, -1 for a child of the root
  const float* candidate_scores;     // [B, C] float32: cumulative, higher is better
  int64_t* draft_tree_tokens;        // [B, N] int64, in place (column 0 kept)
  int32_t* seq_lens_this_time;       // [B] int32, in place: the node count of a decode slot
  const int32_t* seq_lens_encoder;   // [B] int32
  const int32_t* seq_lens_decoder;   // [B] int32
  int32_t* draft_tree_parents;       // [B, N] int32, new
  int32_t* draft_tree_depths;        // [B, N] int32, new
  int64_t batch;                     // B
  int64_t tree_cols;                 // N
  int64_t candidate_count;           // C
  int32_t max_depth;                 // deepest node kept
};

// A slot's candidates straight from the params (CPU, CUDA).
struct CandidatesInMemory {
  const int64_t* tokens;
  const int32_t* parents;
  const float* scores;
  FS_HD int64_t token(int64_t j) const { return tokens[j]; }
  FS_HD int32_t parent(int64_t j) const { return parents[j]; }
  FS_HD float score(int64_t j) const { return scores[j]; }
};

// The tree of one decode slot (EAGLE-2's rule): node after node, the best
// candidate (highest score, the lower index on ties) not yet picked whose
// parent is the root or picked, within max_depth; a candidate with a token
// < 0, a NaN score or a parent that is not an earlier candidate is never
// picked. Writes tokens[1..], parents[1..] and depths[1..] of the nodes it
// picks (the caller has cleared the rows); node_of is C entries of scratch.
// Returns the node count (node 0 included).
template <class Candidates>
FS_HD int64_t build_tree_slot(const Candidates& cand, int64_t count, int64_t cols, int32_t max_depth, int64_t* tokens,
                              int32_t* parents, int32_t* depths, int16_t* node_of) {
  for (int64_t j = 0; j < count; ++j) node_of[j] = -1;
  int64_t nodes = 1;
  for (; nodes < cols; ++nodes) {
    int64_t best = -1;
    float best_score = 0.0f;
    for (int64_t j = 0; j < count; ++j) {
      if (node_of[j] >= 0) continue;
      const int32_t parent = cand.parent(j);
      if (parent < -1 || parent >= j || cand.token(j) < 0) continue;
      if (parent >= 0 && (node_of[parent] < 0 || depths[node_of[parent]] >= max_depth)) continue;
      const float score = cand.score(j);
      if (score != score) continue;  // NaN
      if (best < 0 || score > best_score) {
        best = j;
        best_score = score;
      }
    }
    if (best < 0) break;
    const int32_t parent = cand.parent(best);
    const int32_t parent_node = parent < 0 ? 0 : node_of[parent];
    node_of[best] = static_cast<int16_t>(nodes);
    tokens[nodes] = cand.token(best);
    parents[nodes] = parent_node;
    depths[nodes] = depths[parent_node] + 1;
  }
  return nodes;
}

// build_draft_tree for slot b: rows cleared to a root-only tree, then the
// decode slot's tree (docs/ops/draft_tree.md). node_of: C entries of scratch.
template <class Candidates>
FS_HD void build_tree_rule(int64_t cols, int64_t count, int32_t max_depth, int32_t enc, int32_t dec,
                           const Candidates& cand, int64_t* tokens, int32_t* parents, int32_t* depths,
                           int32_t* this_time, int16_t* node_of) {
  for (int64_t i = 0; i < cols; ++i) {
    if (i > 0) tokens[i] = -1;
    parents[i] = -1;
    depths[i] = i == 0 ? 0 : -1;
  }
  if (is_prefill(enc)) return;
  if (!is_decode(enc, dec)) {
    *this_time = 0;
    return;
  }
  *this_time = static_cast<int32_t>(build_tree_slot(cand, count, cols, max_depth, tokens, parents, depths, node_of));
}

FS_HD void build_tree_slot_in_memory(const BuildDraftTreeParams& a, int64_t b, int16_t* node_of) {
  const CandidatesInMemory cand = {a.candidate_tokens + b * a.candidate_count,
                                   a.candidate_parents + b * a.candidate_count,
                                   a.candidate_scores + b * a.candidate_count};
  const int64_t row = b * a.tree_cols;
  build_tree_rule(a.tree_cols, a.candidate_count, a.max_depth, a.seq_lens_encoder[b], a.seq_lens_decoder[b], cand,
                  a.draft_tree_tokens + row, a.draft_tree_parents + row, a.draft_tree_depths + row,
                  a.seq_lens_this_time + b, node_of);
}

FS_HD bool build_tree_sizes_ok(const BuildDraftTreeParams& a) {
  return a.batch >= 0 && a.tree_cols >= 1 && a.tree_cols <= kMaxTreeNodes && a.candidate_count >= 1 &&
         a.candidate_count <= kMaxTreeCandidates && a.max_depth >= 1;
}

// --- verify_draft_tree -----------------------------------------------------------------------

enum TreeStrategy : int32_t { kTreeGreedy = 0, kTreeTargetMatch = 1, kTreeRejection = 2 };

struct VerifyDraftTreeParams {
  int64_t* accept_tokens;              // [B, K + 1] int64, in place
  int32_t* accept_num;                 // [B] int32, in place
  const int64_t* draft_tree_tokens;    // [B, N] int64
  const int32_t* draft_tree_parents;   // [B, N] int32
  const int64_t* target_tokens;        // [T] int64: GREEDY, TARGET_MATCH (row cu[b] + i scores node i)
  const int64_t* seed;                 // [B] int64: REJECTION
  const int64_t* step_idx;             // [B] int64
  const bool* stop_flags;              // [B] bool
  const bool* is_block_step;           // [B] bool
  const int32_t* seq_lens_encoder;     // [B] int32
  const int32_t* seq_lens_this_time;   // [B] int32: the node count of a decode slot
  const int32_t* cu_seqlens_q_output;  // [B + 1] int32
  const int64_t* max_dec_len;          // [B] int64
  const int64_t* end_tokens;           // [E] int64, E >= 1
  const void* target_probs;            // [T, V] f32 / f16 / bf16: REJECTION (p of each node's row)
  int32_t target_probs_dtype;          // ProbDtype of target_probs and draft_probs
  const void* draft_probs;             // [T, V]: REJECTION (q, the distribution a node's children came from)
  int32_t draft_probs_dtype;
  int32_t* accept_nodes;               // [B, K + 1] int32, new
  int64_t batch;                       // B
  int64_t draft_cols;                  // K + 1
  int64_t tree_cols;                   // N
  int64_t rows;                        // T (0 when the strategy's tensors are left out)
  int64_t vocab;                       // V (REJECTION)
  int64_t num_end_tokens;              // E
  int32_t strategy;                    // TreeStrategy

  FS_HD RejectionRows rejection() const { return {target_probs, draft_probs, target_probs_dtype, vocab}; }
};

FS_HD bool tree_strategy_ok(int32_t strategy) { return strategy >= kTreeGreedy && strategy <= kTreeRejection; }

// Why parents[0 .. nodes) is not a tree of depth at most max_depth in a row of
// `cols` nodes (every parent before its child; docs/trees.md): the first fault,
// in the order of fastspec/reference/trees.py tree_error, at node *node (with
// its depth in *depth), or kTreeOk.
enum TreeFault : int32_t {
  kTreeOk = 0,
  kTreeTooManyNodes = 1,
  kTreeNoParent = 2,
  kTreeCycle = 3,
  kTreeParentAfter = 4,
  kTreeTooDeep = 5
};
FS_HD TreeFault tree_fault(const int32_t* parents, int64_t nodes, int64_t cols, int64_t max_depth, int64_t* node,
                           int64_t* depth) {
  *node = *depth = 0;
  if (nodes > cols) return kTreeTooManyNodes;
  for (int64_t i = 1; i < nodes; ++i) {
    *node = i;
    if (parents[i] < 0) return kTreeNoParent;
    if (parents[i] >= i) return parents[i] == i ? kTreeCycle : kTreeParentAfter;
    *depth = 0;
    for (int64_t n = i; n != 0; n = parents[n]) ++*depth;  // parents of earlier nodes are checked: ends at 0
    if (*depth > max_depth) return kTreeTooDeep;
  }
  return kTreeOk;
}

FS_HD bool tree_ok(const int32_t* parents, int64_t nodes, int64_t cols, int64_t max_depth) {
  int64_t node, depth;
  return tree_fault(parents, nodes, cols, max_depth, &node, &depth) == kTreeOk;
}

// How a node's token is decided, straight from the params (CPU, CUDA).
// accepts(a, b, row, d, position, &tries): is child d (tried in index order)
// accepted? GREEDY, TARGET_MATCH: d is the row's target; REJECTION: SpecInfer's
// tries (multidraft.h). correction(a, b, row, position, tries) after every
// child was rejected or at a leaf (-1: none).
struct TreeRowsInMemory {
  FS_HD bool accepts(const VerifyDraftTreeParams& a, int64_t b, int64_t t, int64_t d, int64_t position,
                     TreeTries* tries) const {
    if (a.strategy != kTreeRejection) return d >= 0 && d == a.target_tokens[t];
    const RejectionRows r = a.rejection();
    const bool known = d >= 0 && d < r.vocab;
    const int64_t mp = known ? rejection_mass(r.target_probs, r.dtype, r.vocab, t, d) : 0;
    const int64_t mq = known ? rejection_mass(r.draft_probs, r.dtype, r.vocab, t, d) : 0;
    return tries_accept(TriesInMemory{r}, t, known ? d : -1, mp, mq, a.seed[b], position, tries);
  }
  FS_HD int64_t correction(const VerifyDraftTreeParams& a, int64_t b, int64_t t, int64_t position,
                           const TreeTries& tries) const {
    if (a.strategy != kTreeRejection) return a.target_tokens[t];
    return TriesInMemory{a.rejection()}.correction(t, tries, a.seed[b], position);
  }
};

// The per-slot rule (docs/ops/draft_tree.md): writes accept_tokens[b, :],
// accept_nodes[b, :] and accept_num[b]; tree rows and flags indexed by b.
// At each node the children are tried in index order; the emitted token is
// the first accepted child's, else the correction, and the walk moves to that
// child, or to the lowest-index child after the first carrying the
// correction (the chain's draft is not followed after a correction), or stops.
template <class Rows>
FS_HD void verify_tree_slot_with(const VerifyDraftTreeParams& a, int64_t b, const Rows& rows) {
  int64_t* out = a.accept_tokens + b * a.draft_cols;
  int32_t* decided = a.accept_nodes + b * a.draft_cols;
  for (int64_t k = 0; k < a.draft_cols; ++k) {
    out[k] = -1;
    decided[k] = -1;
  }
  a.accept_num[b] = 0;
  JudgedRows judged;
  if (!judged_rows(a, b, &judged)) return;
  const int64_t need = judged.need;
  const int64_t first_row = judged.first;

  const int64_t* tokens = a.draft_tree_tokens + b * a.tree_cols;
  const int32_t* parents = a.draft_tree_parents + b * a.tree_cols;
  // A malformed tree judges none of its drafts: only the root's row decides.
  const int64_t nodes = judged.prefill || !tree_ok(parents, need, a.tree_cols, a.draft_cols - 1) ? 1 : need;
  SlotEmitter emitter = slot_emitter(a, b, out);
  TreeTries tries;
  for (int64_t node = 0;;) {
    const int64_t row = first_row + node;
    const int64_t position = static_cast<int64_t>(static_cast<uint64_t>(a.step_idx[b]) + emitter.count);
    tries.count = 0;
    tries.empty = false;
    int64_t first_child = -1, child = -1;
    for (int64_t c = node + 1; c < nodes && child < 0; ++c) {
      if (parents[c] != node) continue;
      if (first_child < 0) first_child = c;
      if (rows.accepts(a, b, row, tokens[c], position, &tries)) child = c;
    }
    int64_t drawn;
    if (child >= 0) {
      drawn = tokens[child];
    } else {
      drawn = rows.correction(a, b, row, position, tries);
      for (int64_t c = first_child + 1; drawn >= 0 && first_child >= 0 && c < nodes && child < 0; ++c) {
        if (parents[c] == node && tokens[c] == drawn) child = c;
      }
    }
    decided[emitter.count] = static_cast<int32_t>(node);
    if (emitter.emit(drawn < 0 ? a.end_tokens[0] : drawn) || child < 0) break;
    node = child;
  }
  a.accept_num[b] = static_cast<int32_t>(emitter.count);
}

FS_HD bool verify_tree_sizes_ok(const VerifyDraftTreeParams& a) {
  return a.batch >= 0 && a.draft_cols >= 1 && a.draft_cols <= kMaxTreeNodes && a.tree_cols >= 1 &&
         a.tree_cols <= kMaxTreeNodes && a.num_end_tokens >= 1 && tree_strategy_ok(a.strategy);
}

// CPU: threads across slots. kInvalidArgument for sizes beyond the limits above.
// XPU: one launch, one core per slot; a core keeps its slot's tree rows in
// local memory and reads candidates and targets from global memory.
// CUDA: one launch, one thread per slot; no allocation, no host
// synchronisation (CUDA Graph safe). Batches above kMaxCudaBatch get
// cudaErrorInvalidValue.
FASTSPEC_LAUNCHERS(build_draft_tree, BuildDraftTreeParams);
FASTSPEC_LAUNCHERS(verify_draft_tree, VerifyDraftTreeParams);

}  // namespace fastspec

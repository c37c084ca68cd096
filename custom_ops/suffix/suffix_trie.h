// SuffixTrie: every substring (up to max_depth tokens) of a set of sequences,
// with how many times it occurs, updated one token at a time.
//
// A node is a substring s; count(s) is its number of occurrences. Appending a
// token to a sequence extends the suffixes of that sequence that are still
// shorter than max_depth (at most max_depth - 1 of them, kept per sequence as
// "open" nodes) and opens a new one at the root: O(max_depth) per token,
// amortised (a child-map grow is the only non-constant step), never a rebuild.
// Only nodes with two or more children use the child map; a single child is
// found through first_child.
// Each node keeps its most frequent child (ties: smallest token), so drafting
// follows a path without scanning children. Removing a sequence walks each of
// its suffixes once, decrementing counts and freeing nodes that reach zero.
// The drafting rule is fastspec/reference/suffix.py's; docs/suffix.md.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "child_map.h"

namespace fastspec::suffix {

struct SpecRule {
  int32_t max_spec_tokens = 0;
  double max_spec_factor = 1.0;
  double max_spec_offset = 0.0;
  double min_token_prob = 0.1;
  // Trees (docs/suffix.md "Trees"): a node offers at most tree_width children (1: the best child
  // only, which is the chain; the chain's own walk then drafts it), at most max_spec_nodes nodes,
  // none deeper than max_spec_depth below the match. The match's budget caps the nodes (Arctic's
  // trees), or with budget_caps_depth the depth (a runner's fixed node count).
  int32_t tree_width = 1;
  int32_t max_spec_depth = INT32_MAX;
  int32_t max_spec_nodes = INT32_MAX;
  bool budget_caps_depth = false;

  int32_t budget(int32_t match_len) const;  // int(m * factor + offset), at most max_spec_tokens
  int32_t nodes(int32_t match_len) const {  // a draft's most tokens (a tree's nodes)
    const int32_t n = budget_caps_depth ? max_spec_nodes : std::min(budget(match_len), max_spec_nodes);
    return tree_width > 1 ? n : std::min(n, depth(match_len));  // a chain's nodes are its depth
  }
  int32_t depth(int32_t match_len) const {  // a draft's deepest token below the match
    return budget_caps_depth ? std::min(budget(match_len), max_spec_depth) : max_spec_depth;
  }
  SpecRule chain() const {  // the rule's chain: what picks the match a tree grows from
    SpecRule c = *this;
    c.tree_width = 1;
    return c;
  }
};

struct Draft {
  std::vector<int32_t> token_ids;
  std::vector<int32_t> parents;  // an earlier index, -1: a child of the context (chain: i - 1)
  std::vector<double> probs;
  double score = 0.0;
  int32_t match_len = 0;
};

// A drafting candidate before its tokens are written: the match's node and length, how many
// tokens its chain draft has and their summed probability (a tree grows from the same match).
struct Candidate {
  int32_t node = -1;
  int32_t match_len = 0;
  int32_t len = 0;
  double score = 0.0;
};

class SuffixTrie {
 public:
  explicit SuffixTrie(int32_t max_depth);

  void append(int64_t seq, int32_t token);
  void extend(int64_t seq, const int32_t* tokens, int64_t n);
  void remove(int64_t seq);  // a sequence never appended to is a no-op
  // closes a sequence for appends (its open nodes are dropped; remove still works)
  void close(int64_t seq);
  bool has(int64_t seq) const { return seqs_.count(seq) != 0; }
  const std::vector<int32_t>* tokens(int64_t seq) const;

  // tail_seq >= 0 says the context ends with that sequence's tokens: its open nodes are then the
  // matches (no walk from the root) for as many tokens as they cover
  // floor: a caller that keeps another draft unless this one scores strictly higher passes that
  // draft's score; match lengths that cannot beat it are skipped (the result then may be any
  // draft scoring <= floor)
  Draft speculate(const int32_t* context, int64_t n, const SpecRule& rule, int64_t tail_seq = -1,
                  double floor = -1.0) const;
  // speculate without writing the draft (no allocation): the winner, written later by write()
  Candidate best(const int32_t* context, int64_t n, const SpecRule& rule, int64_t tail_seq = -1,
                 double floor = -1.0) const;
  void write(const Candidate& c, const SpecRule& rule, Draft& out) const;  // out's vectors are reused

  int64_t num_nodes() const { return static_cast<int64_t>(nodes_.size() - free_.size()); }
  int64_t num_tokens() const { return nodes_[0].count; }
  size_t memory_bytes() const;

 private:
  struct Node {
    int32_t count = 0;
    int32_t token = -1;
    int32_t best = -1;          // most frequent child
    int32_t first_child = -1;   // children as a singly linked list (eviction and best recompute)
    int32_t next_sibling = -1;
    bool indexed = false;       // its children are in children_ (set at its second child)
  };
  struct Sequence {
    std::vector<int32_t> tokens;
    std::vector<int32_t> open;  // nodes of the suffixes shorter than max_depth, longest first
  };

  void append_to(Sequence& s, int32_t token);
  int32_t child_for(int32_t parent, int32_t token) { return count_child(parent, token, find_child(parent, token)); }
  // A node with one child keeps it only in first_child (most nodes of new text: the child map
  // stays small and an append touches no map); its second child indexes both.
  int32_t find_child(int32_t parent, int32_t token) const {
    const Node& p = nodes_[parent];
    if (p.indexed) return children_.find(parent, token);
    return p.first_child >= 0 && nodes_[p.first_child].token == token ? p.first_child : -1;
  }
  // counts one more occurrence of parent's child for token (child: its node, or -1 to create it)
  int32_t count_child(int32_t parent, int32_t token, int32_t child);
  void better_child(int32_t parent, int32_t child);
  void recompute_best(int32_t parent);
  void unlink(int32_t parent, int32_t child);
  int32_t walk(const int32_t* tokens, int64_t n) const;
  // the draft from node (at depth) as the rule walks it: its length and score, tokens written to out when given
  int32_t follow(int32_t node, int32_t depth, int32_t budget, double min_prob, double& score, Draft* out) const;
  // the tree from node (at depth), best-first by probability: its size and score, nodes written to out when given
  int32_t grow(int32_t node, int32_t depth, int32_t budget, const SpecRule& rule, double& score, Draft* out) const;

  int32_t max_depth_;
  std::vector<Node> nodes_;  // nodes_[0] is the root (count: tokens of all sequences)
  std::vector<int32_t> free_;
  ChildMap children_;
  std::unordered_map<int64_t, Sequence> seqs_;
};

}  // namespace fastspec::suffix

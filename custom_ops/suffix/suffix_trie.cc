#include "suffix_trie.h"

#include <algorithm>

namespace fastspec::suffix {

int32_t SpecRule::budget(int32_t match_len) const {
  const double grown = match_len * max_spec_factor + max_spec_offset + 1e-6;
  const double capped = std::min(static_cast<double>(max_spec_tokens), grown);
  return capped > 0.0 ? static_cast<int32_t>(capped) : 0;  // truncation, as the reference's int()
}

SuffixTrie::SuffixTrie(int32_t max_depth) : max_depth_(max_depth) { nodes_.emplace_back(); }

const std::vector<int32_t>* SuffixTrie::tokens(int64_t seq) const {
  auto it = seqs_.find(seq);
  return it == seqs_.end() ? nullptr : &it->second.tokens;
}

int32_t SuffixTrie::count_child(int32_t parent, int32_t token, int32_t child) {
  if (child < 0) {
    if (free_.empty()) {
      child = static_cast<int32_t>(nodes_.size());
      nodes_.emplace_back();
    } else {
      child = free_.back();
      free_.pop_back();
      nodes_[child] = Node{};
    }
    Node& c = nodes_[child];
    Node& p = nodes_[parent];
    c.token = token;
    c.next_sibling = p.first_child;
    if (!p.indexed && p.first_child >= 0) {  // a second child: both go to the map from now on
      p.indexed = true;
      children_.insert(parent, nodes_[p.first_child].token, p.first_child);
    }
    p.first_child = child;
    if (p.indexed) children_.insert(parent, token, child);
  }
  nodes_[child].count += 1;
  better_child(parent, child);
  return child;
}

void SuffixTrie::better_child(int32_t parent, int32_t child) {
  const int32_t best = nodes_[parent].best;
  if (best == child) return;  // it only grew
  const Node& c = nodes_[child];
  if (best < 0 || c.count > nodes_[best].count || (c.count == nodes_[best].count && c.token < nodes_[best].token)) {
    nodes_[parent].best = child;
  }
}

void SuffixTrie::recompute_best(int32_t parent) {
  nodes_[parent].best = -1;
  for (int32_t c = nodes_[parent].first_child; c >= 0; c = nodes_[c].next_sibling) better_child(parent, c);
}

void SuffixTrie::unlink(int32_t parent, int32_t child) {
  int32_t* link = &nodes_[parent].first_child;
  while (*link != child) link = &nodes_[*link].next_sibling;
  *link = nodes_[child].next_sibling;
  if (nodes_[parent].indexed) children_.erase(parent, nodes_[child].token);
}

void SuffixTrie::append(int64_t seq, int32_t token) { append_to(seqs_[seq], token); }

void SuffixTrie::append_to(Sequence& s, int32_t token) {
  s.tokens.push_back(token);
  nodes_[0].count += 1;
  // open[i] has depth open.size() - i; each grows by one token and the root opens a new suffix.
  // Their lookups are independent and in a large tree each is a cache miss: start every load
  // first (the open nodes, then their child slots, then the children and current best children)
  // so the misses overlap instead of queueing.
  const size_t open = s.open.size();
  for (size_t i = 0; i < open; ++i) __builtin_prefetch(&nodes_[s.open[i]]);
  for (size_t i = 0; i < open; ++i) {
    const Node& p = nodes_[s.open[i]];
    if (p.indexed) {
      children_.prefetch(s.open[i], token);
    } else if (p.first_child >= 0) {
      __builtin_prefetch(&nodes_[p.first_child]);
    }
  }
  int32_t found[4096];  // open < max_depth <= 4096
  for (size_t i = 0; i < open; ++i) {
    found[i] = find_child(s.open[i], token);
    if (found[i] >= 0) __builtin_prefetch(&nodes_[found[i]]);
    const int32_t best = nodes_[s.open[i]].best;
    if (best >= 0) __builtin_prefetch(&nodes_[best]);
  }
  // Written back in place (the write index never passes the read index), longest first.
  size_t kept = 0;
  for (size_t i = 0; i < open; ++i) {
    const int32_t node = count_child(s.open[i], token, found[i]);
    if (static_cast<int32_t>(open - i) + 1 < max_depth_) s.open[kept++] = node;
  }
  s.open.resize(kept);
  const int32_t newest = child_for(0, token);
  if (max_depth_ > 1) s.open.push_back(newest);
}

void SuffixTrie::extend(int64_t seq, const int32_t* tokens, int64_t n) {
  Sequence& s = seqs_[seq];  // an empty sequence still exists (a response that has not started)
  for (int64_t i = 0; i < n; ++i) append_to(s, tokens[i]);
}

void SuffixTrie::close(int64_t seq) {
  auto it = seqs_.find(seq);
  if (it != seqs_.end()) std::vector<int32_t>().swap(it->second.open);
}

void SuffixTrie::remove(int64_t seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return;
  const std::vector<int32_t>& t = it->second.tokens;
  const int64_t n = static_cast<int64_t>(t.size());
  for (int64_t start = 0; start < n; ++start) {
    nodes_[0].count -= 1;
    int32_t parent = 0;
    const int64_t stop = std::min<int64_t>(n, start + max_depth_);
    for (int64_t i = start; i < stop; ++i) {
      const int32_t child = find_child(parent, t[i]);
      Node& c = nodes_[child];
      c.count -= 1;
      const bool was_best = nodes_[parent].best == child;
      if (c.count == 0) {
        // everything below lies on this suffix only: free the rest of its path
        unlink(parent, child);
        int32_t dead = child;
        for (int64_t j = i + 1; j < stop; ++j) {
          const int32_t below = find_child(dead, t[j]);
          if (nodes_[dead].indexed) children_.erase(dead, t[j]);
          free_.push_back(dead);
          dead = below;
        }
        free_.push_back(dead);
        if (was_best) recompute_best(parent);
        break;
      }
      if (was_best) recompute_best(parent);
      parent = child;
    }
  }
  seqs_.erase(it);
}

int32_t SuffixTrie::walk(const int32_t* tokens, int64_t n) const {
  int32_t node = 0;
  for (int64_t i = 0; i < n && node >= 0; ++i) node = find_child(node, tokens[i]);
  return node;
}

int32_t SuffixTrie::follow(int32_t node, int32_t depth, int32_t budget, double min_prob, double& score,
                           Draft* out) const {
  int32_t len = 0;
  double prob = 1.0;
  score = 0.0;
  while (len < budget && depth < max_depth_) {
    const int32_t child = nodes_[node].best;
    if (child < 0) break;
    prob = prob * static_cast<double>(nodes_[child].count) / static_cast<double>(nodes_[node].count);
    if (prob < min_prob) break;
    if (out) {
      out->parents.push_back(len - 1);
      out->token_ids.push_back(nodes_[child].token);
      out->probs.push_back(prob);
    }
    score += prob;
    ++len;
    node = child;
    ++depth;
  }
  return len;
}

Candidate SuffixTrie::best(const int32_t* context, int64_t n, const SpecRule& rule, int64_t tail_seq,
                           double floor) const {
  const int64_t longest = std::min<int64_t>(n, max_depth_ - 1);
  const std::vector<int32_t>* open = nullptr;
  if (tail_seq >= 0) {
    auto it = seqs_.find(tail_seq);
    if (it != seqs_.end()) open = &it->second.open;
  }
  const int64_t known = open ? static_cast<int64_t>(open->size()) : 0;  // open[known - m]: the last m tokens
  // every matching length (a longer one matches only if the shorter ones do)
  int32_t match[4096];
  int64_t found = 0;
  while (found < longest) {
    const int64_t m = found + 1;
    const int32_t node = m <= known ? (*open)[known - m] : walk(context + n - m, m);
    if (node < 0) break;
    match[found++] = node;
  }
  // Longest first, keeping a strictly better score: the reference's winner (the best score, the
  // longest match on ties). A draft scores at most its budget, and budgets shrink with the
  // match, so once the budget cannot beat the best (or the floor) no shorter match can. A tree
  // grows from the match its chain would win with (write), so the chain's walk scores every rule.
  const SpecRule chain = rule.chain();
  Candidate best;
  bool have = false;
  for (int64_t m = found; m >= 1; --m) {
    const int32_t budget = chain.nodes(static_cast<int32_t>(m));
    if (have && budget <= std::max(best.score, floor)) break;
    if (!have && floor >= 0.0 && budget <= floor) break;
    double score = 0.0;
    const int32_t len = follow(match[m - 1], static_cast<int32_t>(m), budget, rule.min_token_prob, score, nullptr);
    if (!have || score > best.score) {
      best = Candidate{match[m - 1], static_cast<int32_t>(m), len, score};
      have = true;
    }
  }
  return best;
}

int32_t SuffixTrie::grow(int32_t node, int32_t depth, int32_t budget, const SpecRule& rule, double& score,
                         Draft* out) const {
  struct Offer {
    double prob;
    int32_t node, depth, parent;  // depth: in the trie; parent: the draft index of its parent (-1: the match)
  };
  thread_local std::vector<Offer> frontier;  // in the order offered
  thread_local std::vector<int32_t> kids;
  frontier.clear();
  int32_t len = 0;
  score = 0.0;
  const int32_t deepest = rule.depth(depth);
  // node's most frequent children (ties: the smaller token), as many as the width and the nodes left allow,
  // while their probability stays >= min_token_prob (they are offered most likely first)
  const auto offer = [&](int32_t from, int32_t from_depth, double prob, int32_t parent) {
    if (from_depth >= max_depth_ || from_depth - depth >= deepest) return;
    kids.clear();
    for (int32_t c = nodes_[from].first_child; c >= 0; c = nodes_[c].next_sibling) kids.push_back(c);
    const size_t take =
        std::min<size_t>({kids.size(), static_cast<size_t>(rule.tree_width), static_cast<size_t>(budget - len)});
    std::partial_sort(kids.begin(), kids.begin() + take, kids.end(), [&](int32_t a, int32_t b) {
      return nodes_[a].count > nodes_[b].count ||
             (nodes_[a].count == nodes_[b].count && nodes_[a].token < nodes_[b].token);
    });
    for (size_t i = 0; i < take; ++i) {
      const double p = prob * static_cast<double>(nodes_[kids[i]].count) / static_cast<double>(nodes_[from].count);
      if (p < rule.min_token_prob) break;
      frontier.push_back(Offer{p, kids[i], from_depth + 1, parent});
    }
  };
  offer(node, depth, 1.0, -1);
  while (len < budget && !frontier.empty()) {
    size_t top = 0;  // the most probable offer, the earliest on ties
    for (size_t i = 1; i < frontier.size(); ++i) {
      if (frontier[i].prob > frontier[top].prob) top = i;
    }
    const Offer o = frontier[top];
    frontier.erase(frontier.begin() + static_cast<std::ptrdiff_t>(top));
    if (out) {
      out->parents.push_back(o.parent);
      out->token_ids.push_back(nodes_[o.node].token);
      out->probs.push_back(o.prob);
    }
    score += o.prob;
    ++len;
    offer(o.node, o.depth, o.prob, len - 1);
  }
  return len;
}

void SuffixTrie::write(const Candidate& c, const SpecRule& rule, Draft& out) const {
  out.token_ids.clear();
  out.parents.clear();
  out.probs.clear();
  out.score = 0.0;
  out.match_len = c.match_len;
  // the same walk, cut at the candidate's length, so the same probabilities and score; or the tree from its match
  if (c.node < 0) return;
  if (rule.tree_width > 1) {
    grow(c.node, c.match_len, rule.nodes(c.match_len), rule, out.score, &out);
  } else {
    follow(c.node, c.match_len, c.len, -1.0, out.score, &out);
  }
}

Draft SuffixTrie::speculate(const int32_t* context, int64_t n, const SpecRule& rule, int64_t tail_seq,
                            double floor) const {
  Draft d;
  write(best(context, n, rule, tail_seq, floor), rule, d);
  return d;
}

size_t SuffixTrie::memory_bytes() const {
  size_t total = nodes_.capacity() * sizeof(Node) + free_.capacity() * sizeof(int32_t) + children_.bytes();
  for (const auto& [id, s] : seqs_) {
    total += sizeof(s) + 32 + (s.tokens.capacity() + s.open.capacity()) * sizeof(int32_t);
  }
  return total;
}

}  // namespace fastspec::suffix

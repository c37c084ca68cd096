// SuffixCache: the host-side cache of suffix decoding (docs/suffix.md).
//
// One SuffixTrie per active request over its prompt and response, and one
// global SuffixTrie over the responses of cached requests (active ones
// included), at most max_cached_requests of them (-1: no limit, 0: none), the
// oldest evicted first. With an NgramRule, each active request also has an
// NgramChoice, and draft() picks between the suffix and anchored n-gram drafts. Requests are int64 keys; the Python
// front end (fastspec/suffix.py) maps any hashable id to one and checks every argument first, so the checks here are a
// last guard (std::invalid_argument).
#pragma once

#include <climits>
#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ngram_choice.h"
#include "suffix_trie.h"

namespace fastspec::suffix {

class SuffixCache {
 public:
  // token ids must lie in [0, max_token]
  SuffixCache(int32_t max_depth, int64_t max_cached_requests, int64_t max_token = INT32_MAX,
              const NgramRule& ngram = NgramRule{});

  // returns the requests whose cached responses it evicted to stay within max_cached_requests
  std::vector<int64_t> start_request(int64_t req, const int32_t* prompt, int64_t n);
  void add_active_response(int64_t req, const int32_t* tokens, int64_t n);
  void stop_request(int64_t req);
  void evict_cached_response(int64_t req);
  Draft speculate(int64_t req, const int32_t* context, int64_t n, const SpecRule& rule) const;
  void speculate(int64_t req, const int32_t* context, int64_t n, const SpecRule& rule, Draft& out) const;
  // The request's draft from its own prompt + response (speculate_batch's); with an NgramRule,
  // out.token_ids may become the anchored n-gram draft instead (NgramChoice::choose; the other
  // fields stay the suffix draft's). The drafts offered are scored by the request's next append.
  void draft(int64_t req, const SpecRule& rule, Draft& out);

  // Batch calls over n requests. speculate_batch drafts from each request's own
  // prompt + response (its last max_depth - 1 tokens), up to max_tokens[i]
  // drafts into out_tokens[i, :width] (-1 after the draft), the draft length
  // into out_lens[i]; a key < 0 gets no draft. extend_batch appends
  // tokens[i, :counts[i]] to request keys[i] (keys < 0 and counts <= 0 skip;
  // an active key's count <= 0 still scores the drafts draft() offered it).
  // With rule.tree_width > 1 the drafts are trees: out_parents[i, :width] (when given) holds each
  // node's parent (an earlier index, -1: a child of the context; -1 after the draft) and
  // out_probs[i, :width] (when given) each node's probability (0 after the draft).
  void speculate_batch(const int64_t* keys, const int32_t* max_tokens, int64_t n, const SpecRule& rule,
                       int64_t* out_tokens, int32_t* out_lens, float* out_scores, int64_t width,
                       int32_t* out_parents = nullptr, float* out_probs = nullptr) const;
  void extend_batch(const int64_t* keys, const int64_t* tokens, const int32_t* counts, int64_t n, int64_t width);

  bool active(int64_t req) const { return local_.count(req) != 0; }
  bool cached(int64_t req) const { return seq_of_.count(req) != 0; }
  std::vector<int64_t> active_requests() const;
  std::vector<int64_t> cached_requests() const;  // oldest first
  const std::vector<int32_t>& request_tokens(int64_t req) const;
  int32_t max_depth() const { return max_depth_; }
  int64_t max_cached_requests() const { return max_cached_requests_; }
  int64_t max_token() const { return max_token_; }
  const NgramRule& ngram_rule() const { return ngram_; }
  size_t memory_bytes() const;
  int64_t global_tokens() const { return global_.num_tokens(); }
  int64_t global_nodes() const { return global_.num_nodes(); }

 private:
  const SuffixTrie& local(int64_t req) const;
  // the winner for a context that is the request's own tail, and the tree that holds it
  std::pair<const SuffixTrie*, Candidate> speculate_tail(int64_t req, const SuffixTrie& own, const int32_t* context,
                                                         int64_t n, const SpecRule& rule) const;
  void own_draft(int64_t req, const SpecRule& rule, Draft& out) const;  // from the request's own tail
  void append_response(int64_t req, const int32_t* tokens, int64_t n);
  NgramChoice* choice(int64_t req);  // nullptr without an NgramRule

  int32_t max_depth_;
  int64_t max_cached_requests_;
  int64_t max_token_;
  NgramRule ngram_;
  std::unordered_map<int64_t, std::unique_ptr<SuffixTrie>> local_;
  std::unordered_map<int64_t, NgramChoice> choices_;  // active request -> its second drafter
  SuffixTrie global_;
  std::unordered_map<int64_t, int64_t> seq_of_;  // cached request -> its sequence in global_
  std::deque<std::pair<int64_t, int64_t>> order_;  // (request, sequence), oldest first; stale entries skipped
  int64_t next_seq_ = 0;
};

}  // namespace fastspec::suffix

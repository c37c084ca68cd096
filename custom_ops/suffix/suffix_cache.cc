#include "suffix_cache.h"

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>

namespace fastspec::suffix {

namespace {
[[noreturn]] void refuse(const std::string& what) { throw std::invalid_argument("SuffixCache: " + what); }
}  // namespace

SuffixCache::SuffixCache(int32_t max_depth, int64_t max_cached_requests, int64_t max_token, const NgramRule& ngram)
    : max_depth_(max_depth),
      max_cached_requests_(max_cached_requests),
      max_token_(max_token),
      ngram_(ngram),
      global_(max_depth) {
  if (max_depth < 1 || max_depth > 4096) refuse("max_depth must be in [1, 4096]");
  if (max_cached_requests < -1) refuse("max_cached_requests must be >= -1");
  if (max_token < 0 || max_token > INT32_MAX) refuse("max_token must be in [0, 2**31 - 1]");
  if (ngram.max_ngram_size < 0 ||
      (ngram.max_ngram_size > 0 && (ngram.min_ngram_size < 1 || ngram.min_ngram_size > ngram.max_ngram_size))) {
    refuse("the n-gram sizes must satisfy 1 <= min_ngram_size <= max_ngram_size (max_ngram_size 0: none)");
  }
}

const SuffixTrie& SuffixCache::local(int64_t req) const {
  auto it = local_.find(req);
  if (it == local_.end()) refuse("request " + std::to_string(req) + " is not active");
  return *it->second;
}

std::vector<int64_t> SuffixCache::start_request(int64_t req, const int32_t* prompt, int64_t n) {
  if (local_.count(req)) refuse("request " + std::to_string(req) + " is already active");
  auto trie = std::make_unique<SuffixTrie>(max_depth_);
  trie->extend(0, prompt, n);
  local_.emplace(req, std::move(trie));
  if (ngram_.max_ngram_size > 0) choices_.emplace(req, NgramChoice(ngram_, prompt, n));
  std::vector<int64_t> evicted;
  if (max_cached_requests_ == 0) return evicted;
  if (seq_of_.count(req)) evict_cached_response(req);
  const int64_t seq = next_seq_++;
  seq_of_.emplace(req, seq);
  order_.emplace_back(req, seq);
  global_.extend(seq, nullptr, 0);
  while (max_cached_requests_ > 0 && static_cast<int64_t>(seq_of_.size()) > max_cached_requests_) {
    const auto [oldest, oldest_seq] = order_.front();
    order_.pop_front();
    auto it = seq_of_.find(oldest);
    if (it != seq_of_.end() && it->second == oldest_seq) {
      evict_cached_response(oldest);
      evicted.push_back(oldest);
    }
  }
  return evicted;
}

NgramChoice* SuffixCache::choice(int64_t req) {
  if (choices_.empty()) return nullptr;
  auto it = choices_.find(req);
  return it == choices_.end() ? nullptr : &it->second;
}

void SuffixCache::append_response(int64_t req, const int32_t* tokens, int64_t n) {
  auto it = local_.find(req);
  it->second->extend(0, tokens, n);
  if (NgramChoice* c = choice(req)) c->append(tokens, n);
  auto cached = seq_of_.find(req);
  if (cached != seq_of_.end()) global_.extend(cached->second, tokens, n);
}

void SuffixCache::add_active_response(int64_t req, const int32_t* tokens, int64_t n) {
  local(req);  // refuses an inactive request
  if (NgramChoice* c = choice(req)) c->score(tokens, n);
  append_response(req, tokens, n);
}

void SuffixCache::stop_request(int64_t req) {
  local(req);
  local_.erase(req);
  choices_.erase(req);
  auto cached = seq_of_.find(req);
  if (cached != seq_of_.end()) global_.close(cached->second);  // a finished response grows no more
}

void SuffixCache::evict_cached_response(int64_t req) {
  auto it = seq_of_.find(req);
  if (it == seq_of_.end()) refuse("request " + std::to_string(req) + " is not cached");
  global_.remove(it->second);
  seq_of_.erase(it);
  // its order_ entry turns stale; drop stale entries at the front so the deque stays bounded
  while (!order_.empty()) {
    auto front = seq_of_.find(order_.front().first);
    if (front != seq_of_.end() && front->second == order_.front().second) break;
    order_.pop_front();
  }
}

Draft SuffixCache::speculate(int64_t req, const int32_t* context, int64_t n, const SpecRule& rule) const {
  Draft draft;
  speculate(req, context, n, rule, draft);
  return draft;
}

void SuffixCache::speculate(int64_t req, const int32_t* context, int64_t n, const SpecRule& rule, Draft& out) const {
  const SuffixTrie& own = local(req);
  const std::vector<int32_t>& seq = *own.tokens(0);
  const int64_t m = std::min<int64_t>(n, max_depth_ - 1);  // the longest match the rule tries
  if (m > 0 && m <= static_cast<int64_t>(seq.size()) && std::equal(context + n - m, context + n, seq.end() - m)) {
    const auto [trie, winner] =
        speculate_tail(req, own, context + n - m, m, rule);  // the usual call: the request's tail
    trie->write(winner, rule, out);
    return;
  }
  const Candidate mine = own.best(context, n, rule);
  const Candidate other = global_.best(context, n, rule, -1, mine.score);
  if (other.score > mine.score) {
    global_.write(other, rule, out);
  } else {
    own.write(mine, rule, out);
  }
}

void SuffixCache::own_draft(int64_t req, const SpecRule& rule, Draft& out) const {
  const SuffixTrie& own = local(req);
  const std::vector<int32_t>& seq = *own.tokens(0);
  const int64_t len = static_cast<int64_t>(seq.size());
  const int64_t ctx = std::min<int64_t>(len, std::max(0, max_depth_ - 1));
  const auto [trie, winner] = speculate_tail(req, own, seq.data() + len - ctx, ctx, rule);
  trie->write(winner, rule, out);
}

void SuffixCache::draft(int64_t req, const SpecRule& rule, Draft& out) {
  own_draft(req, rule, out);
  if (NgramChoice* c = choice(req)) c->choose(out.token_ids, rule.max_spec_tokens);
}

std::pair<const SuffixTrie*, Candidate> SuffixCache::speculate_tail(int64_t req, const SuffixTrie& own,
                                                                    const int32_t* context, int64_t n,
                                                                    const SpecRule& rule) const {
  // the context is the request's own tail: its open nodes are the matches in both trees
  const Candidate mine = own.best(context, n, rule, 0);
  auto cached = seq_of_.find(req);
  const Candidate other = global_.best(context, n, rule, cached == seq_of_.end() ? -1 : cached->second, mine.score);
  if (other.score > mine.score) return {&global_, other};
  return {&own, mine};
}

void SuffixCache::speculate_batch(const int64_t* keys, const int32_t* max_tokens, int64_t n, const SpecRule& rule,
                                  int64_t* out_tokens, int32_t* out_lens, float* out_scores, int64_t width,
                                  int32_t* out_parents, float* out_probs) const {
  for (int64_t i = 0; i < n; ++i) {  // checked before anything is written
    if (keys[i] >= 0) local(keys[i]);
  }
  Draft d;  // one set of buffers for every row
  for (int64_t i = 0; i < n; ++i) {
    int64_t* row = out_tokens + i * width;
    std::fill(row, row + width, int64_t{-1});
    int32_t* parents = out_parents ? out_parents + i * width : nullptr;
    float* probs = out_probs ? out_probs + i * width : nullptr;
    if (parents) std::fill(parents, parents + width, -1);
    if (probs) std::fill(probs, probs + width, 0.0f);
    out_lens[i] = 0;
    if (out_scores) out_scores[i] = 0.0f;
    if (keys[i] < 0 || max_tokens[i] <= 0) continue;
    SpecRule r = rule;
    // the row's cap: on the tree's nodes when the budget caps its depth, else on the budget
    int32_t& cap = rule.budget_caps_depth ? r.max_spec_nodes : r.max_spec_tokens;
    cap = static_cast<int32_t>(std::min<int64_t>({cap, max_tokens[i], width}));
    own_draft(keys[i], r, d);
    const int64_t m = static_cast<int64_t>(d.token_ids.size());
    for (int64_t j = 0; j < m; ++j) {
      row[j] = d.token_ids[j];
      if (parents) parents[j] = d.parents[j];
      if (probs) probs[j] = static_cast<float>(d.probs[j]);
    }
    out_lens[i] = static_cast<int32_t>(m);
    if (out_scores) out_scores[i] = static_cast<float>(d.score);
  }
}

void SuffixCache::extend_batch(const int64_t* keys, const int64_t* tokens, const int32_t* counts, int64_t n,
                               int64_t width) {
  for (int64_t i = 0; i < n; ++i) {  // checked before anything changes
    if (keys[i] < 0 || counts[i] <= 0) continue;
    local(keys[i]);
    if (counts[i] > width) refuse("extend_batch: a count exceeds the token rows' width");
    for (int64_t j = 0; j < counts[i]; ++j) {
      const int64_t t = tokens[i * width + j];
      if (t < 0 || t > max_token_) refuse("extend_batch: token id " + std::to_string(t) + " out of range");
    }
  }
  int32_t row[4096];  // counts[i] <= width, and a step keeps at most draft_token_num + 1 tokens
  for (int64_t i = 0; i < n; ++i) {
    if (keys[i] < 0) continue;
    if (NgramChoice* c = choice(keys[i])) c->score(tokens + i * width, std::max<int64_t>(counts[i], 0));
    if (counts[i] <= 0) continue;
    for (int64_t done = 0; done < counts[i]; done += 4096) {
      const int64_t part = std::min<int64_t>(4096, counts[i] - done);
      std::copy(tokens + i * width + done, tokens + i * width + done + part, row);
      append_response(keys[i], row, part);
    }
  }
}

std::vector<int64_t> SuffixCache::active_requests() const {
  std::vector<int64_t> out;
  for (const auto& [req, trie] : local_) out.push_back(req);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<int64_t> SuffixCache::cached_requests() const {
  std::vector<int64_t> out;
  for (const auto& [req, seq] : order_) {
    auto it = seq_of_.find(req);
    if (it != seq_of_.end() && it->second == seq) out.push_back(req);
  }
  return out;
}

const std::vector<int32_t>& SuffixCache::request_tokens(int64_t req) const { return *local(req).tokens(0); }

size_t SuffixCache::memory_bytes() const {
  size_t total = global_.memory_bytes();
  for (const auto& [req, trie] : local_) total += trie->memory_bytes();
  for (const auto& [req, c] : choices_) total += c.memory_bytes();
  return total;
}

}  // namespace fastspec::suffix

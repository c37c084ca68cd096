// process_logits on the CPU. Rows are grouped by slot (a counting sort on the
// calling thread), and slots run across the pool. A slot counts its prompt and
// output once into a per-thread table indexed by token (0: not in the history,
// else 1 + output count) while listing the distinct tokens; each of its rows
// adds its drafts' path to the table, rewrites the logits of the listed tokens
// only, and takes the path out again. The penalties cost a pass over the
// history and a read-modify-write per distinct token and row: well under a
// read of the logits at any history shorter than the vocabulary.
#include "fastspec/process_logits.h"

#include <vector>

#include "fastspec/parallel.h"

namespace fastspec {
namespace {

struct SlotTable {
  std::vector<uint32_t> state;    // [V]: 0 = not in the history, else 1 + its output count
  std::vector<int32_t> distinct;  // the tokens whose state is set, in first-seen order
};

class HistoryCounts {
 public:
  HistoryCounts(SlotTable& table, int64_t vocab) : t_(table), vocab_(vocab) {
    if (static_cast<int64_t>(t_.state.size()) < vocab) t_.state.assign(vocab, 0);
  }
  ~HistoryCounts() { clear(0); }

  void add(int64_t token, uint32_t output) {
    if (!in_vocab(token, vocab_)) return;
    uint32_t& st = t_.state[token];
    if (st == 0) {
      t_.distinct.push_back(static_cast<int32_t>(token));
      st = 1;
    }
    st += output;
  }
  void remove_output(int64_t token) {
    if (in_vocab(token, vocab_)) t_.state[token] -= 1;
  }
  // Forgets the tokens listed after the first `keep`.
  void clear(size_t keep) {
    for (size_t i = keep; i < t_.distinct.size(); ++i) t_.state[t_.distinct[i]] = 0;
    t_.distinct.resize(keep);
  }
  size_t size() const { return t_.distinct.size(); }

  void penalize(float* row, float repetition, float presence, float frequency) const {
    const uint32_t* state = t_.state.data();
    for (const int32_t token : t_.distinct) {
      row[token] = penalized_logit(row[token], static_cast<int64_t>(state[token]) - 1, repetition, presence,
                                   frequency);
    }
  }

 private:
  SlotTable& t_;
  int64_t vocab_;
};

void ban(float* row, int64_t token, int64_t vocab) {
  if (in_vocab(token, vocab)) row[token] = negative_infinity_f32();
}

void process_slot(const ProcessLogitsParams& p, int64_t b, const int32_t* slot_rows, int64_t n) {
  static thread_local SlotTable table;
  const int64_t vocab = p.vocab, cols = p.draft_cols;
  const float repetition = p.repetition_penalty[b], presence = p.presence_penalty[b];
  const float frequency = p.frequency_penalty[b];
  const bool penalties = penalties_on(repetition, presence, frequency);
  const LogitsHistory h = logits_history(p.prompt_lens[b], p.step_idx[b], p.max_model_len);
  const int64_t* tokens = p.token_ids_all + b * p.max_model_len;
  const int64_t* drafts = p.draft_tokens + b * cols;
  const int32_t* parents = p.draft_parents ? p.draft_parents + b * cols : nullptr;
  const int64_t* bias_ids = p.logit_bias_ids + b * p.bias_cols;
  const float* bias_values = p.logit_bias_values + b * p.bias_cols;
  const int64_t* stops = p.stop_token_ids + b * p.stop_cols;
  const int64_t* words = p.bad_words + b * p.bad_words_cols;
  const auto entry = [words](int64_t i) { return words[i]; };

  HistoryCounts counts(table, penalties ? vocab : 0);
  if (penalties) {
    for (int64_t i = 0; i < h.prompt_end; ++i) counts.add(tokens[i], 0);
    for (int64_t i = h.prompt_end; i < h.output_end; ++i) counts.add(tokens[i], 1);
  }
  const size_t base = counts.size();
  int32_t path[kMaxLogitsPath];
  for (int64_t r = 0; r < n; ++r) {
    const int64_t t = slot_rows[r];
    float* row = p.logits + t * vocab;
    const int64_t path_len = logits_path(parents, logits_row_node(t, p.cu_seqlens_q_output[b], cols), path);
    if (penalties) {
      for (int64_t i = 0; i < path_len; ++i) counts.add(drafts[path[i]], 1);
      counts.penalize(row, repetition, presence, frequency);
      for (int64_t i = 0; i < path_len; ++i) counts.remove_output(drafts[path[i]]);
      counts.clear(base);
    }
    for (int64_t k = 0; k < p.bias_cols; ++k) {
      if (in_vocab(bias_ids[k], vocab)) row[bias_ids[k]] = add_f32(row[bias_ids[k]], bias_values[k]);
    }
    const auto from_end = [&](int64_t k) {
      return k < path_len ? drafts[path[path_len - 1 - k]] : tokens[h.output_end - 1 - (k - path_len)];
    };
    const int64_t available = h.output_end - h.prompt_end + path_len;
    for (int64_t e = 0; e < p.bad_words_cols; ++e) {
      if (bad_word_bans(entry, e, p.bad_words_cols, available, from_end)) ban(row, words[e], vocab);
    }
    if (logits_tokens_out(h.out, path_len) < p.min_tokens[b]) {
      for (int64_t e = 0; e < p.num_end_tokens; ++e) ban(row, p.end_tokens[e], vocab);
      for (int64_t s = 0; s < p.stop_cols; ++s) ban(row, stops[s], vocab);
    }
  }
}

}  // namespace

int process_logits_cpu(const ProcessLogitsParams& p) {
  // Rows grouped by slot, in row order: starts[b] .. starts[b + 1] of order.
  static thread_local std::vector<int32_t> order, starts;
  order.assign(p.rows, 0);
  starts.assign(p.batch + 2, 0);
  for (int64_t t = 0; t < p.rows; ++t) {
    const int32_t b = p.batch_id_per_token_output[t];
    if (b >= 0 && b < p.batch) ++starts[b + 2];
  }
  for (int64_t b = 0; b < p.batch; ++b) starts[b + 2] += starts[b + 1];
  for (int64_t t = 0; t < p.rows; ++t) {
    const int32_t b = p.batch_id_per_token_output[t];
    if (b >= 0 && b < p.batch) order[starts[b + 1]++] = static_cast<int32_t>(t);
  }
  const int32_t* grouped = order.data();
  const int32_t* begin = starts.data();
  const auto run = [&p, grouped, begin](int64_t first, int64_t last) {
    for (int64_t b = first; b < last; ++b) {
      if (begin[b + 1] > begin[b]) process_slot(p, b, grouped + begin[b], begin[b + 1] - begin[b]);
    }
  };
  if (p.batch > 1 && p.rows * p.vocab >= (int64_t{1} << 20)) {
    parallel_for(p.batch, 1, run);
  } else {
    run(0, p.batch);
  }
  return kOk;
}

}  // namespace fastspec

// process_logits on the CPU. Rows are grouped by slot (a counting sort on the
// calling thread), and slots run across the pool. A slot counts its prompt and
// output once into a per-thread table indexed by token (0: not in the history,
// else 1 + output count), marking each token in a bitmap; reading the bitmap in
// order gives the history's distinct tokens sorted, with their counts, as two
// compact arrays. Each row then rewrites those tokens' logits in increasing
// order (a walk through the row the prefetcher follows), and its path's tokens
// (at most K) once more from their logits saved before, with the path's
// occurrences added. The cost is a pass over each slot's history and one
// read-modify-write per distinct history token and row: under a read of the
// logits for any history shorter than the vocabulary.
#include "fastspec/process_logits.h"

#include <vector>

#include "fastspec/parallel.h"
#include "simd.h"

#if FASTSPEC_X86
#include <immintrin.h>
#endif

namespace fastspec {
namespace {

// The penalties of m logits with their output counts, in place: the portable loop, and an AVX2
// one with the same bits (AVX-512 CPUs run it too). The compiler does not vectorise the portable
// loop's selects (it may not speculate a division that could trap), and the divisions dominate.
void penalize_block(Scalar, float* block, const int32_t* counts, int64_t m, float repetition, float presence,
                    float frequency) {
  for (int64_t i = 0; i < m; ++i) {
    block[i] = penalize_f32(block[i], static_cast<float>(counts[i]), counts[i] > 0, repetition, presence, frequency);
  }
}

#if FASTSPEC_X86
FS_TARGET_AVX2 void penalize_block(Avx2, float* block, const int32_t* counts, int64_t m, float repetition,
                                   float presence, float frequency) {
  const bool repeat = repetition_on(repetition), count = counts_on(presence, frequency);
  const __m256 r = _mm256_set1_ps(repetition), pr = _mm256_set1_ps(presence), fr = _mm256_set1_ps(frequency);
  int64_t i = 0;
  for (; i + 8 <= m; i += 8) {
    const __m256 x = _mm256_loadu_ps(block + i);
    __m256 out = x;
    if (repeat) {  // x > 0 (false for NaN): divided, else multiplied
      const __m256 positive = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GT_OQ);
      out = _mm256_blendv_ps(_mm256_mul_ps(x, r), _mm256_div_ps(x, r), positive);
    }
    if (count) {
      const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(counts + i));
      const __m256 counted = _mm256_sub_ps(_mm256_sub_ps(out, _mm256_mul_ps(fr, _mm256_cvtepi32_ps(c))), pr);
      out = _mm256_blendv_ps(out, counted, _mm256_castsi256_ps(_mm256_cmpgt_epi32(c, _mm256_setzero_si256())));
    }
    _mm256_storeu_ps(block + i, out);
  }
  penalize_block(Scalar{}, block + i, counts + i, m - i, repetition, presence, frequency);
}
#endif

// The per-thread tables; every entry is back to 0 between slots.
struct SlotTable {
  std::vector<uint32_t> state;  // [V]: 0 = not in the history, else 1 + its output count
  std::vector<uint64_t> seen;   // [V / 64]: the tokens whose state is set
  std::vector<int32_t> tokens;  // the history's distinct tokens, increasing
  std::vector<int32_t> counts;  // their output counts
};

class HistoryCounts {
 public:
  HistoryCounts(SlotTable& table, int64_t vocab) : t_(table), vocab_(vocab) {
    if (static_cast<int64_t>(t_.state.size()) < vocab) t_.state.assign(vocab, 0);
    const int64_t words = (vocab + 63) / 64;
    if (static_cast<int64_t>(t_.seen.size()) < words) t_.seen.assign(words, 0);
  }
  ~HistoryCounts() {
    for (const int32_t token : t_.tokens) t_.state[token] = 0;
    t_.tokens.clear();
    t_.counts.clear();
  }

  void add(int64_t token, uint32_t output) {
    if (!in_vocab(token, vocab_)) return;
    uint32_t& st = t_.state[token];
    if (st == 0) {
      t_.seen[token >> 6] |= uint64_t{1} << (token & 63);
      st = 1;
    }
    st += output;
  }
  // The distinct tokens in increasing order, with their counts; clears the bitmap.
  void list() {
    const int64_t words = (vocab_ + 63) / 64;
    for (int64_t w = 0; w < words; ++w) {
      for (uint64_t bits = t_.seen[w]; bits != 0; bits &= bits - 1) {
        const int32_t token = static_cast<int32_t>(w * 64 + __builtin_ctzll(bits));
        t_.tokens.push_back(token);
        t_.counts.push_back(static_cast<int32_t>(t_.state[token] - 1));
      }
      t_.seen[w] = 0;
    }
  }
  // Output occurrences of `token` in the committed history.
  int64_t count(int64_t token) const { return t_.state[token] == 0 ? 0 : int64_t{t_.state[token]} - 1; }

  // In blocks: gather the logits, penalize them with the widest SIMD level, scatter them back.
  void penalize(float* row, float repetition, float presence, float frequency) const {
    with_simd_level([&](auto level) {
      constexpr int64_t kBlock = 256;
      const int32_t* tokens = t_.tokens.data();
      const int32_t* counts = t_.counts.data();
      const int64_t n = static_cast<int64_t>(t_.tokens.size());
      float block[kBlock];
      for (int64_t base = 0; base < n; base += kBlock) {
        const int64_t m = n - base < kBlock ? n - base : kBlock;
        const int32_t* ids = tokens + base;
        for (int64_t i = 0; i < m; ++i) block[i] = row[ids[i]];
        penalize_block(level, block, counts + base, m, repetition, presence, frequency);
        for (int64_t i = 0; i < m; ++i) row[ids[i]] = block[i];
      }
    });
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
    counts.list();
  }
  int32_t path[kMaxLogitsPath];
  float saved[kMaxLogitsPath];  // the logit of each path token's first occurrence, before the penalties
  for (int64_t r = 0; r < n; ++r) {
    const int64_t t = slot_rows[r];
    float* row = p.logits + t * vocab;
    const int64_t path_len = logits_path(parents, logits_row_node(t, p.cu_seqlens_q_output[b], cols), path);
    if (penalties) {
      for (int64_t i = 0; i < path_len; ++i) {
        if (in_vocab(drafts[path[i]], vocab)) saved[i] = row[drafts[path[i]]];
      }
      counts.penalize(row, repetition, presence, frequency);
      for (int64_t i = 0; i < path_len; ++i) {  // each path token again, from its saved logit
        const int64_t token = drafts[path[i]];
        if (!in_vocab(token, vocab)) continue;
        int64_t in_path = 0;
        bool first = true;
        for (int64_t j = 0; j < path_len; ++j) {
          if (drafts[path[j]] != token) continue;
          first &= j >= i;
          ++in_path;
        }
        if (!first) continue;
        row[token] = penalized_logit(saved[i], counts.count(token) + in_path, repetition, presence, frequency);
      }
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

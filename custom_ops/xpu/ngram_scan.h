// The n-gram search of one slot by all cores of a cluster, shared by
// ngram_match.xpu and ngram_append.xpu. The slot's regions (prompt, generated
// tokens) stream through local memory in tiles: in round r core c takes tile
// r * cores + c, tests every end position whose token equals the newest one,
// extends each such candidate backwards in small copied chunks, and keeps its
// best key (ngram_match.h: longest, prompt first, leftmost). After each round
// the cores tell one another through shared memory whether a full-length match
// was seen: the leftmost one then lies in this round, so the scan stops. A
// last exchange reduces the cores' keys to the cluster's.
#pragma once

#include "fastspec/ngram_match.h"
#include "xpu_kernel.h"

namespace fastspec {
namespace xpu {

constexpr int kScanTile = 256;       // tokens per core and round: 2 KB of LM
constexpr int kCompareChunk = 16;    // tokens per side and copy when extending a match: 2 x 128 B of LM

// A token sequence: gm_len tokens in global memory followed by tail_len
// tokens in this core's local memory (ngram_append's kept model drafts).
struct TokenSource {
  const xpu_int64 __global_ptr__* gm;
  int64_t gm_len;
  const int64_t* tail;
  int64_t tail_len;
};

// Tokens [from, from + n) of src into the LM buffer dst.
static inline __device__ void load_tokens(const TokenSource& src, int64_t from, int n, int64_t* dst) {
  const int in_gm = from < src.gm_len ? static_cast<int>(min64(n, src.gm_len - from)) : 0;
  if (in_gm > 0) GM2LM(src.gm + from, dst, in_gm * static_cast<int>(sizeof(int64_t)));
  for (int j = in_gm; j < n; ++j) dst[j] = src.tail[from + j - src.gm_len];
}

static inline __device__ int64_t load_token(const TokenSource& src, int64_t at) {
  int64_t token;
  load_tokens(src, at, 1, &token);
  return token;
}

// ngram_match_length for a candidate ending at e of region (whose token is
// known to equal the newest query token), reading both sides in chunks.
static inline __device__ int32_t match_length(const TokenSource& region, int64_t e, const TokenSource& query,
                                              int64_t newest, int32_t max_len) {
  int64_t r[kCompareChunk], q[kCompareChunk];
  int32_t m = 1;
  while (m < max_len && e - m >= 0) {
    const int n = static_cast<int>(min64(min64(kCompareChunk, max_len - m), e - m + 1));
    load_tokens(region, e - m - n + 1, n, r);  // region[e - m - n + 1 .. e - m]
    load_tokens(query, newest - m - n + 1, n, q);
    for (int j = 0; j < n; ++j) {
      if (r[n - 1 - j] != q[n - 1 - j]) return m + j;
    }
    m += n;
  }
  return m;
}

// A row of tokens in global memory, read one value at a time: the Row of the
// anchored-drafting rules (ngram_match.h), which read at most (K + 1)^2 tokens.
struct GmRow {
  const xpu_int64 __global_ptr__* tokens;
  __device__ int64_t operator()(int64_t i) const { return load_scalar(tokens, i); }
};

struct ScanShared {
  unsigned long long best[kMaxCores];
  int full[kMaxCores];
};

// What the search compares against: the query (generated tokens, read back
// from `newest`), its newest token and the length limits.
struct ScanQuery {
  TokenSource tokens;
  int64_t newest;
  int64_t last_token;
  int32_t max_len, min_len;
};

// The best key over the candidates ending in region[0 .. last_end], the same
// on every core of the cluster. Every core calls it (it holds barriers).
static inline __device__ uint64_t scan_region(const TokenSource& region, int64_t last_end, int generated,
                                              const ScanQuery& query, _shared_ptr_ ScanShared* sm) {
  const int cores = core_num();
  const int me = core_id();
  int64_t tile[kScanTile];
  uint64_t best = kNoMatch;
  for (int64_t base = 0; base <= last_end; base += static_cast<int64_t>(kScanTile) * cores) {
    const int64_t first = base + static_cast<int64_t>(me) * kScanTile;
    int full = 0;
    if (first <= last_end) {
      const int n = static_cast<int>(min64(kScanTile, last_end - first + 1));
      load_tokens(region, first, n, tile);
      for (int j = 0; j < n && !full; ++j) {
        if (tile[j] != query.last_token) continue;
        const int32_t len = match_length(region, first + j, query.tokens, query.newest, query.max_len);
        if (len < query.min_len) continue;
        const uint64_t key = ngram_match_key(len, generated, first + j);
        if (key < best) best = key;
        full = len == query.max_len;  // later ends of this tile cannot beat it
      }
    }
    sm->full[me] = full;
    mfence_sm();
    sync_all();
    int any = 0;
    for (int c = 0; c < cores; ++c) any |= sm->full[c];
    sync_all();  // every core has read `full` before the next round writes it
    if (any) break;
  }
  sm->best[me] = best;
  mfence_sm();
  sync_all();
  uint64_t cluster_best = kNoMatch;
  for (int c = 0; c < cores; ++c) {
    if (sm->best[c] < cluster_best) cluster_best = sm->best[c];
  }
  sync_all();  // every core has read `best` before shared memory is used again
  return cluster_best;
}

// The best key of a slot: the prompt first, then the generated region unless
// the prompt already gave a full-length match.
static inline __device__ uint64_t search_slot(const TokenSource& prompt, int64_t prompt_last_end,
                                              const TokenSource& generated, int64_t generated_last_end,
                                              const ScanQuery& query, _shared_ptr_ ScanShared* sm) {
  uint64_t best = scan_region(prompt, prompt_last_end, 0, query, sm);
  if (best == kNoMatch || ngram_key_length(best) < query.max_len) {
    const uint64_t in_generated = scan_region(generated, generated_last_end, 1, query, sm);
    if (in_generated < best) best = in_generated;
  }
  return best;
}

}  // namespace xpu
}  // namespace fastspec

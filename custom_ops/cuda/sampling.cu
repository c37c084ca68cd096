// top_p_candidates, sample_tokens and top_k_top_p_probs on CUDA: one block per
// output row, one launch per op, no allocation, no host synchronisation (CUDA
// Graph safe). The block runs the same integer algorithm as the CPU kernel
// (see fastspec/sampling.h): totals, radix selects over the combined key with
// shared-memory count/mass histograms (early exit on a single-element
// bucket), then either a gather + rank sort of the <= K' survivors
// (top_p_candidates), one ordered scan over the row by id (sample_tokens), or
// one coalesced write of the renormalised row (top_k_top_p_probs); the last
// two find their set with sampling.h's sample_set.
// Every decision is on integers, so the results equal the CPU kernel's and
// the reference's bit for bit.
#include "cuda_kernel.h"

#include "block_primitives.h"

#include "fastspec/prob_dtype.h"
#include "fastspec/sampling.h"

namespace fastspec {
namespace {

constexpr int kThreads = 512;
constexpr int kCandPerThread = kMaxCandidateLen / kThreads;  // 2
constexpr int kDrawItems = 4;                                // ids per thread per draw chunk

using BlockScan = block::Scan<long long, kThreads>;
using BlockReduce = block::Reduce<long long, kThreads>;

struct Shared {
  unsigned int count[kRadixBuckets];
  unsigned long long mass[kRadixBuckets];
  int last[kRadixBuckets];
  union {
    typename BlockScan::TempStorage scan;
    typename BlockReduce::TempStorage reduce;
  } temp;
  unsigned long long cand[kMaxCandidateLen];
  // results broadcast to the block
  int chosen;
  long long above_w, above_mass;
  unsigned long long found;
  int n_cand;
  int len;
  int max_key;
  long long token;
};

template <typename Tag>
__device__ __forceinline__ uint64_t combined_at(const typename Tag::T* row, int64_t i, int64_t vocab, int id_bits) {
  return combined_key(key_of(Tag{}, row, i), i, vocab, id_bits);
}

// The row's largest key (to every thread): what min_p's cut is relative to.
template <typename Tag>
__device__ uint32_t row_max_key(const typename Tag::T* row, int64_t vocab, Shared& s) {
  if (threadIdx.x == 0) s.max_key = 0;
  __syncthreads();
  uint32_t m = 0;
  for (int64_t i = threadIdx.x; i < vocab; i += kThreads) {
    const uint32_t k = key_of(Tag{}, row, i);
    m = k > m ? k : m;
  }
  m = __reduce_max_sync(0xffffffffu, m);  // every lane gets here: kThreads is a multiple of 32
  if ((threadIdx.x & 31u) == 0) atomicMax(&s.max_key, static_cast<int>(m));  // keys are < 2^31
  __syncthreads();
  return static_cast<uint32_t>(s.max_key);  // written once per block: no barrier needed after the read
}

// min_p's floor of a row (sampling.h minp_floor): 1, every valid key, when min_p cannot cut.
template <typename Tag>
__device__ uint32_t row_minp_floor(const typename Tag::T* row, int64_t vocab, float min_p, Shared& s) {
  return minp_active(min_p) ? minp_floor(row_max_key<Tag>(row, vocab, s), min_p) : 1u;
}

// Row totals: number of entries with key >= floor (the valid ones min_p keeps) and their mass (to every thread).
template <typename Tag>
__device__ void row_totals(const typename Tag::T* row, int64_t vocab, uint32_t floor, Shared& s, int64_t* n_valid,
                           int64_t* mass) {
  long long n = 0, m = 0;
  for (int64_t i = threadIdx.x; i < vocab; i += kThreads) {
    const uint32_t k = key_of(Tag{}, row, i);
    n += k >= floor;
    m += k >= floor ? mass_of_bits(k) : 0;
  }
  const long long nt = BlockReduce(s.temp.reduce).Sum(n);
  if (threadIdx.x == 0) s.above_w = nt;
  __syncthreads();
  const long long mt = BlockReduce(s.temp.reduce).Sum(m);
  if (threadIdx.x == 0) s.above_mass = mt;
  __syncthreads();
  *n_valid = s.above_w;
  *mass = s.above_mass;
  __syncthreads();
}

// The cut of the set {combined >= lower} where the cumulative weight (count,
// or mass when by_mass) in probability order first reaches target
// (1 <= target <= the set's weight). Same contract as the CPU radix_select.
template <typename Tag>
__device__ SelectResult radix_select(const typename Tag::T* row, int64_t vocab, int id_bits, uint64_t lower,
                                     int64_t target, bool by_mass, Shared& s) {
  constexpr int kPer = kRadixBuckets / kThreads;  // buckets per thread in the scan
  const int width = combined_width(id_bits);
  uint64_t prefix = 0;
  int done = 0;
  long long above_w = 0, above_mass = 0;
  for (;;) {
    const RadixLevel level = radix_level(width, done, kRadixBits);
    for (int d = threadIdx.x; d < kRadixBuckets; d += kThreads) {
      s.count[d] = 0;
      s.mass[d] = 0;
      s.last[d] = -1;
    }
    __syncthreads();
    // Warp-aggregated histogram: lanes that hit the same bucket combine their count,
    // mass (summed exactly in two 20-bit halves) and largest index, and one lane
    // updates shared memory. Every lane runs the same number of iterations (kThreads
    // is a multiple of 32), so the full-mask warp intrinsics are well defined.
    const uint64_t want_high = (level.high >= 64) ? 0 : (prefix >> level.high);
    const unsigned lane = threadIdx.x & 31u;
    for (int64_t base = 0; base < vocab; base += kThreads) {
      const int64_t i = base + threadIdx.x;
      int d = -1;
      uint64_t m = 0;
      if (i < vocab) {
        const uint64_t c = combined_at<Tag>(row, i, vocab, id_bits);
        if (c >= lower && (c >> level.high) == want_high) {
          d = static_cast<int>(level.digit(c));
          m = static_cast<uint64_t>(mass_of_bits(cut_bits(c, id_bits)));
        }
      }
      const unsigned peers = __match_any_sync(0xffffffffu, d);
      const unsigned lo = __reduce_add_sync(peers, static_cast<unsigned>(m & 0xfffffu));
      const unsigned hi = __reduce_add_sync(peers, static_cast<unsigned>(m >> 20));
      const unsigned imax = __reduce_max_sync(peers, static_cast<unsigned>(i < vocab ? i : 0));
      if (d >= 0 && lane == static_cast<unsigned>(__ffs(peers) - 1)) {
        atomicAdd(&s.count[d], static_cast<unsigned>(__popc(peers)));
        const unsigned long long group_mass = (static_cast<unsigned long long>(hi) << 20) + lo;
        if (group_mass != 0) atomicAdd(&s.mass[d], group_mass);
        atomicMax(&s.last[d], static_cast<int>(imax));  // the element itself when the bucket holds one
      }
    }
    __syncthreads();
    // Thread t owns buckets [top - (t + 1) * kPer, top - t * kPer): thread 0 the highest,
    // so an exclusive scan over threads gives the weight above each thread's buckets.
    const int hi = kRadixBuckets - 1 - threadIdx.x * kPer;
    long long w_local = 0, m_local = 0;
    for (int j = 0; j < kPer; ++j) {
      const int d = hi - j;
      m_local += static_cast<long long>(s.mass[d]);
      w_local += by_mass ? static_cast<long long>(s.mass[d]) : static_cast<long long>(s.count[d]);
    }
    long long w_excl, m_excl;
    BlockScan(s.temp.scan).ExclusiveSum(w_local, w_excl);
    __syncthreads();
    BlockScan(s.temp.scan).ExclusiveSum(m_local, m_excl);
    if (threadIdx.x == 0) {  // no bucket reaches the target only if the preconditions fail
      s.chosen = 0;
      s.above_w = 0;
      s.above_mass = 0;
    }
    __syncthreads();
    const long long need = target - above_w;  // >= 1
    if (w_excl < need && w_excl + w_local >= need) {
      long long w_run = w_excl, m_run = m_excl;
      for (int j = 0; j < kPer; ++j) {
        const int d = hi - j;
        const long long w = by_mass ? static_cast<long long>(s.mass[d]) : static_cast<long long>(s.count[d]);
        if (w_run + w >= need) {
          s.chosen = d;
          s.above_w = w_run;
          s.above_mass = m_run;
          break;
        }
        w_run += w;
        m_run += static_cast<long long>(s.mass[d]);
      }
    }
    __syncthreads();
    const int d = s.chosen;
    above_w += s.above_w;
    above_mass += s.above_mass;
    const unsigned int cnt = s.count[d];
    const int last = s.last[d];
    __syncthreads();  // s.* may be overwritten by the next level
    prefix |= static_cast<uint64_t>(d) << level.shift;
    done += level.digits;
    if (cnt == 1 || level.shift == 0) {
      const uint64_t cut = cnt == 1 ? combined_at<Tag>(row, last, vocab, id_bits) : prefix;
      return {cut, above_mass + mass_of_bits(cut_bits(cut, id_bits))};
    }
  }
}

// S of output row t (sampling.h sample_set, after its request's min_p floor
// and the row totals), on every thread of the block; *b its request. False for
// a padding row or a row without a valid entry.
template <typename Tag, typename Params>
__device__ bool row_sample_set(const Params& a, int64_t t, const typename Tag::T* row, int id_bits, Shared& s,
                               int64_t* b, SelectResult* set) {
  if (!row_request(a.batch_id_per_token_output, t, a.batch, b)) return false;
  const uint32_t floor = row_minp_floor<Tag>(row, a.vocab, min_p_of(a.min_p, *b), s);
  int64_t n_valid, total;
  row_totals<Tag>(row, a.vocab, floor, s, &n_valid, &total);
  if (n_valid == 0) return false;
  auto select = [&](uint64_t lower, int64_t target, bool by_mass) {
    return radix_select<Tag>(row, a.vocab, id_bits, lower, target, by_mass, s);
  };
  *set = sample_set(a.top_k[*b], a.top_p[*b], a.vocab, n_valid, total, id_bits, floor, select);
  return true;
}

template <typename Tag>
__global__ void __launch_bounds__(kThreads) top_p_candidates_kernel(TopPCandidatesParams a) {
  __shared__ Shared s;
  const int64_t t = blockIdx.x;
  const int kk = a.max_candidate_len;
  int64_t* ids = a.candidate_ids + t * kk;
  float* scores = a.candidate_scores + t * kk;
  const int id_bits = id_bits_for(a.vocab);
  int len = 0;
  int64_t b;
  if (row_request(a.batch_id_per_token_output, t, a.batch, &b)) {
    const auto* row = static_cast<const typename Tag::T*>(a.probs) + t * a.vocab;
    const uint32_t floor = row_minp_floor<Tag>(row, a.vocab, min_p_of(a.min_p, b), s);
    int64_t n_valid, total;
    row_totals<Tag>(row, a.vocab, floor, s, &n_valid, &total);
    if (n_valid > 0) {
      const uint64_t kept = static_cast<uint64_t>(floor) << id_bits;  // every entry min_p keeps
      uint64_t cut = kept;
      if (n_valid > kk) cut = radix_select<Tag>(row, a.vocab, id_bits, kept, kk, false, s).cut;
      // gather the survivors (at most K'), in any order
      if (threadIdx.x == 0) s.n_cand = 0;
      __syncthreads();
      for (int64_t i = threadIdx.x; i < a.vocab; i += kThreads) {
        const uint64_t c = combined_at<Tag>(row, i, a.vocab, id_bits);
        if (c >= cut) {
          const int pos = atomicAdd(&s.n_cand, 1);
          if (pos < kMaxCandidateLen) s.cand[pos] = c;
        }
      }
      __syncthreads();
      const int n = min(s.n_cand, kMaxCandidateLen);
      // rank sort, descending (keys are unique)
      uint64_t mine[kCandPerThread];
      int rank[kCandPerThread];
      for (int j = 0; j < kCandPerThread; ++j) {
        const int e = threadIdx.x + j * kThreads;
        rank[j] = -1;
        if (e < n) {
          mine[j] = s.cand[e];
          int r = 0;
          for (int o = 0; o < n; ++o) r += s.cand[o] > mine[j];
          rank[j] = r;
        }
      }
      __syncthreads();
      for (int j = 0; j < kCandPerThread; ++j) {
        if (rank[j] >= 0) s.cand[rank[j]] = mine[j];
      }
      __syncthreads();
      // top-p prefix over the sorted candidates: thread t holds elements 2t, 2t+1
      const int64_t thr = topp_threshold(total, a.top_p[b]);
      long long m[kCandPerThread];
      for (int j = 0; j < kCandPerThread; ++j) {
        const int e = threadIdx.x * kCandPerThread + j;
        m[j] = e < n ? mass_of_bits(cut_bits(s.cand[e], id_bits)) : 0;
      }
      long long cum[kCandPerThread];
      BlockScan(s.temp.scan).InclusiveSum(m, cum);
      if (threadIdx.x == 0) s.len = n;
      __syncthreads();
      for (int j = 0; j < kCandPerThread; ++j) {
        const int e = threadIdx.x * kCandPerThread + j;
        if (e < n && cum[j] >= thr) {
          atomicMin(&s.len, e + 1);
          break;
        }
      }
      __syncthreads();
      len = s.len;
      for (int e = threadIdx.x; e < len; e += kThreads) {
        ids[e] = cut_id(s.cand[e], a.vocab, id_bits);
        scores[e] = f32_from_bits(cut_bits(s.cand[e], id_bits));
      }
    }
  }
  for (int e = len + threadIdx.x; e < kk; e += kThreads) {
    ids[e] = -1;
    scores[e] = 0.0f;
  }
  if (threadIdx.x == 0) a.candidate_lens[t] = len;
}

// The first id (ascending) of S = {combined >= cut} whose cumulative mass
// within S exceeds point (0 <= point < S's mass), on every thread of the block.
template <typename Tag>
__device__ int64_t draw_token(const typename Tag::T* row, int64_t vocab, int id_bits, uint64_t cut, long long point,
                              Shared& s) {
  if (threadIdx.x == 0) s.token = -1;
  __syncthreads();
  long long running = 0;
  for (int64_t base = 0; base < vocab; base += int64_t{kThreads} * kDrawItems) {
    const int64_t first = base + int64_t{threadIdx.x} * kDrawItems;
    long long m[kDrawItems];
    long long local = 0;
    for (int j = 0; j < kDrawItems; ++j) {
      const int64_t i = first + j;
      m[j] = 0;
      if (i < vocab) {
        const uint64_t c = combined_at<Tag>(row, i, vocab, id_bits);
        if (c >= cut) m[j] = mass_of_bits(cut_bits(c, id_bits));
      }
      local += m[j];
    }
    long long excl, chunk_total;
    BlockScan(s.temp.scan).ExclusiveSum(local, excl, chunk_total);
    const long long start = running + excl;
    if (start <= point && point < start + local) {
      long long cum = start;
      for (int j = 0; j < kDrawItems; ++j) {
        cum += m[j];
        if (cum > point) {
          s.token = first + j;
          break;
        }
      }
    }
    running += chunk_total;
    __syncthreads();
    if (s.token >= 0) break;
  }
  return s.token;
}

template <typename Tag>
__global__ void __launch_bounds__(kThreads) sample_tokens_kernel(SampleTokensParams a) {
  __shared__ Shared s;
  const int64_t t = blockIdx.x;
  const int id_bits = id_bits_for(a.vocab);
  const auto* row = static_cast<const typename Tag::T*>(a.probs) + t * a.vocab;
  int64_t token = -1;  // a padding row, or one without a valid entry
  int64_t b;
  SelectResult set;
  if (row_sample_set<Tag>(a, t, row, id_bits, s, &b, &set)) {
    if (set.mass_upto == 0) {
      token = cut_id(set.cut, a.vocab, id_bits);
    } else {
      const uint64_t r = rand64(a.seed[b], row_position(a.step_idx, a.cu_seqlens_q_output, b, t), a.rand_stream);
      token = draw_token<Tag>(row, a.vocab, id_bits, set.cut, static_cast<long long>(draw_point(r, set.mass_upto)), s);
    }
  }
  if (threadIdx.x == 0) a.tokens[t] = token;
}

// A row's S renormalised (sampling.h kept_probability), zeros elsewhere; one
// coalesced pass writes every element. Padding rows and rows without a valid
// entry are all zeros.
template <typename Tag>
__global__ void __launch_bounds__(kThreads) top_k_top_p_probs_kernel(TopKTopPProbsParams a) {
  __shared__ Shared s;
  const int64_t t = blockIdx.x;
  const int id_bits = id_bits_for(a.vocab);
  float* out = a.target_probs + t * a.vocab;
  const auto* row = static_cast<const typename Tag::T*>(a.probs) + t * a.vocab;
  int64_t b;
  SelectResult set;
  if (!row_sample_set<Tag>(a, t, row, id_bits, s, &b, &set)) {  // block-uniform: an empty row reads nothing
    for (int64_t i = threadIdx.x; i < a.vocab; i += kThreads) out[i] = 0.0f;
    return;
  }
  for (int64_t i = threadIdx.x; i < a.vocab; i += kThreads) {
    const uint32_t k = key_of(Tag{}, row, i);
    const bool kept = combined_key(k, i, a.vocab, id_bits) >= set.cut;
    out[i] = kept ? kept_probability(mass_of_bits(k), set.mass_upto) : 0.0f;
  }
}

// The checks every sampling launcher makes (and the op's own, args_ok), then
// one block per row with the kernel for the probabilities' dtype, kernel_for(tag).
template <typename Params, typename KernelFor>
cudaError_t launch_rows(const Params& a, bool args_ok, cudaStream_t stream, KernelFor kernel_for) {
  if (!args_ok || check_sampling_sizes(a.rows, a.vocab, a.batch, a.probs_dtype) != kOk ||
      a.rows >= (int64_t{1} << 31)) {
    return cudaErrorInvalidValue;
  }
  if (a.rows == 0) return cudaSuccess;
  return with_prob_tag(a.probs_dtype, [&](auto tag) {
    const auto kernel = kernel_for(tag);
    FS_CUDA_LAUNCH(kernel, static_cast<unsigned>(a.rows), kThreads, 0, stream, a);
    return cudaGetLastError();
  });
}

}  // namespace

cudaError_t top_p_candidates_cuda(const TopPCandidatesParams& a, cudaStream_t stream) {
  const bool k_ok =
      a.max_candidate_len >= 1 && a.max_candidate_len <= kMaxCandidateLen && a.max_candidate_len <= a.vocab;
  return launch_rows(a, k_ok, stream, [](auto tag) { return top_p_candidates_kernel<decltype(tag)>; });
}

cudaError_t sample_tokens_cuda(const SampleTokensParams& a, cudaStream_t stream) {
  return launch_rows(a, sample_stream_ok(a.rand_stream), stream,
                     [](auto tag) { return sample_tokens_kernel<decltype(tag)>; });
}

cudaError_t top_k_top_p_probs_cuda(const TopKTopPProbsParams& a, cudaStream_t stream) {
  return launch_rows(a, true, stream, [](auto tag) { return top_k_top_p_probs_kernel<decltype(tag)>; });
}

}  // namespace fastspec

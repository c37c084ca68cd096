// Host launchers of top_p_candidates, sample_tokens and top_k_top_p_probs on
// the XPU: one launch each, a cluster per row.
#include "fastspec/sampling.h"
#include "kernels.h"

namespace fastspec {

int top_p_candidates_xpu(const TopPCandidatesParams& p, const XpuGrid& grid) {
  if (!xpu::grid_ok(grid) || check_sampling_sizes(p.rows, p.vocab, p.batch, p.probs_dtype) != kOk ||
      p.max_candidate_len < 1 || p.max_candidate_len > kMaxCandidateLen || p.max_candidate_len > p.vocab) {
    return kInvalidArgument;
  }
  if (p.rows == 0) return kOk;
  return FS_XPU_LAUNCH(grid.clusters, grid, xpu::top_p_candidates_kernel, static_cast<const unsigned char*>(p.probs),
                       p.probs_dtype, p.top_p, p.batch_id_per_token_output, p.min_p, xpu::i64(p.candidate_ids),
                       p.candidate_scores, p.candidate_lens, p.rows, p.vocab, p.batch, p.max_candidate_len);
}

int sample_tokens_xpu(const SampleTokensParams& p, const XpuGrid& grid) {
  if (!xpu::grid_ok(grid) || check_sampling_sizes(p.rows, p.vocab, p.batch, p.probs_dtype) != kOk ||
      !sample_stream_ok(p.rand_stream)) {
    return kInvalidArgument;
  }
  if (p.rows == 0) return kOk;
  return FS_XPU_LAUNCH(grid.clusters, grid, xpu::sample_tokens_kernel, static_cast<const unsigned char*>(p.probs),
                       p.probs_dtype, p.top_p, p.top_k, xpu::i64(p.seed), xpu::i64(p.step_idx),
                       p.batch_id_per_token_output, p.cu_seqlens_q_output, p.min_p, xpu::i64(p.tokens), p.rows, p.vocab,
                       p.batch, p.rand_stream);
}

int top_k_top_p_probs_xpu(const TopKTopPProbsParams& p, const XpuGrid& grid) {
  if (!xpu::grid_ok(grid) || check_sampling_sizes(p.rows, p.vocab, p.batch, p.probs_dtype) != kOk) {
    return kInvalidArgument;
  }
  if (p.rows == 0) return kOk;
  return FS_XPU_LAUNCH(grid.clusters, grid, xpu::top_k_top_p_probs_kernel, static_cast<const unsigned char*>(p.probs),
                       p.probs_dtype, p.top_p, p.top_k, p.batch_id_per_token_output, p.min_p, p.target_probs, p.rows,
                       p.vocab, p.batch);
}

}  // namespace fastspec

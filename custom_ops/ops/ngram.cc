// ngram_match and ngram_append: an OpCall to NgramMatchParams (both ops take
// the same arguments), and each backend's launcher.
#include "fastspec/ngram_append.h"
#include "fastspec/ngram_match.h"
#include "emulation/launchers.h"
#include "fastspec/op_call.h"
#include "fastspec/op_schema.h"

namespace fastspec {
namespace {

namespace a = arg::ngram_match;
namespace at = attr::ngram_match;

NgramMatchParams ngram_params(const OpCall& c) {
  NgramMatchParams p{};
  p.token_ids_all = c.data<const int64_t>(a::token_ids_all);
  p.prompt_lens = c.data<const int64_t>(a::prompt_lens);
  p.step_idx = c.data<const int64_t>(a::step_idx);
  p.draft_token_num = c.data<const int32_t>(a::draft_token_num);
  p.draft_tokens = c.data<int64_t>(a::draft_tokens);
  p.seq_lens_this_time = c.data<int32_t>(a::seq_lens_this_time);
  p.seq_lens_encoder = c.data<const int32_t>(a::seq_lens_encoder);
  p.seq_lens_decoder = c.data<const int32_t>(a::seq_lens_decoder);
  p.max_dec_len = c.data<const int64_t>(a::max_dec_len);
  p.ngram_anchor = c.data<int64_t>(a::ngram_anchor);  // nullptr when left out
  p.batch = c.size(a::token_ids_all, 0);
  p.max_model_len = c.size(a::token_ids_all, 1);
  p.draft_cols = c.size(a::draft_tokens, 1);
  p.max_ngram_size = static_cast<int32_t>(c.attr(at::max_ngram_size));
  p.min_ngram_size = static_cast<int32_t>(c.attr(at::min_ngram_size));
  p.token_budget = c.attr(at::token_budget);
  return p;
}

static_assert(arg::ngram_append::max_dec_len == a::max_dec_len, "ngram_append takes ngram_match's arguments");

}  // namespace

FASTSPEC_REGISTER(ngram_match, kCpu, [](const OpCall& c) { return ngram_match_cpu(ngram_params(c)); });
FASTSPEC_REGISTER(ngram_append, kCpu, [](const OpCall& c) { return ngram_append_cpu(ngram_params(c)); });
// The XPU kernels: emulated on the host, or real under XTDK (custom_ops/xpu).
FASTSPEC_REGISTER(ngram_match, kXpu, [](const OpCall& c) { return ngram_match_xpu(ngram_params(c), c.xpu()); });
FASTSPEC_REGISTER(ngram_append, kXpu, [](const OpCall& c) { return ngram_append_xpu(ngram_params(c), c.xpu()); });
// The CUDA kernels on the host emulation of a CUDA device (custom_ops/cuda/emulation).
FASTSPEC_REGISTER(ngram_match, kCudaEmulator, [](const OpCall& c) { return cuda_emulated(c, [&] { return ngram_match_cuda_emulated(ngram_params(c), nullptr); }); });
FASTSPEC_REGISTER(ngram_append, kCudaEmulator, [](const OpCall& c) { return cuda_emulated(c, [&] { return ngram_append_cuda_emulated(ngram_params(c), nullptr); }); });
#if defined(FASTSPEC_WITH_CUDA)
FASTSPEC_REGISTER(ngram_match, kCuda, [](const OpCall& c) {
  return static_cast<int>(ngram_match_cuda(ngram_params(c), static_cast<cudaStream_t>(c.stream)));
});
FASTSPEC_REGISTER(ngram_append, kCuda, [](const OpCall& c) {
  return static_cast<int>(ngram_append_cuda(ngram_params(c), static_cast<cudaStream_t>(c.stream)));
});
#endif

}  // namespace fastspec

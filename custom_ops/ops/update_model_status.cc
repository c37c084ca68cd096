// update_model_status: an OpCall to UpdateModelStatusParams, and each
// backend's launcher.
#include "emulation/launchers.h"
#include "fastspec/op_call.h"
#include "fastspec/op_schema.h"
#include "fastspec/update_model_status.h"

namespace fastspec {
namespace {

UpdateModelStatusParams update_params(const OpCall& c) {
  namespace a = arg::update_model_status;
  UpdateModelStatusParams p{};
  p.seq_lens_encoder = c.data<int32_t>(a::seq_lens_encoder);
  p.seq_lens_decoder = c.data<int32_t>(a::seq_lens_decoder);
  p.seq_lens_this_time = c.data<int32_t>(a::seq_lens_this_time);
  p.step_idx = c.data<int64_t>(a::step_idx);
  p.stop_flags = c.data<bool>(a::stop_flags);
  p.accept_tokens = c.data<int64_t>(a::accept_tokens);
  p.accept_num = c.data<int32_t>(a::accept_num);
  p.draft_tokens = c.data<int64_t>(a::draft_tokens);
  p.token_ids_all = c.data<int64_t>(a::token_ids_all);
  p.prompt_lens = c.data<const int64_t>(a::prompt_lens);
  p.is_block_step = c.data<const bool>(a::is_block_step);
  p.max_dec_len = c.data<const int64_t>(a::max_dec_len);
  p.end_tokens = c.data<const int64_t>(a::end_tokens);
  p.has_running = c.data<bool>(a::has_running);
  p.batch = c.size(a::seq_lens_encoder, 0);
  p.draft_cols = c.size(a::accept_tokens, 1);
  p.max_model_len = c.size(a::token_ids_all, 1);
  p.num_end_tokens = c.size(a::end_tokens, 0);
  return p;
}

}  // namespace

FASTSPEC_REGISTER(update_model_status, kCpu, [](const OpCall& c) { return update_model_status_cpu(update_params(c)); });
// The XPU kernels: emulated on the host, or real under XTDK (custom_ops/xpu).
FASTSPEC_REGISTER(update_model_status, kXpu, [](const OpCall& c) { return update_model_status_xpu(update_params(c), c.xpu()); });
// The CUDA kernels on the host emulation of a CUDA device (custom_ops/cuda/emulation).
FASTSPEC_REGISTER(update_model_status, kCudaEmulator, [](const OpCall& c) { return cuda_emulated(c, [&] { return update_model_status_cuda_emulated(update_params(c), nullptr); }); });
#if defined(FASTSPEC_WITH_CUDA)
FASTSPEC_REGISTER(update_model_status, kCuda, [](const OpCall& c) {
  return static_cast<int>(update_model_status_cuda(update_params(c), static_cast<cudaStream_t>(c.stream)));
});
#endif

}  // namespace fastspec

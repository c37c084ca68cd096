// Paddle registration of update_model_status: checks, shapes, in-place map,
// dispatch on place. has_running is the one new output ([1] bool, same place).
#include "checks.h"
#include "fastspec/update_model_status.h"

namespace {

constexpr const char* kOp = "update_model_status";
using paddle::DataType;
using namespace fastspec_paddle;

std::vector<paddle::Tensor> UpdateModelStatus(
    paddle::Tensor& seq_lens_encoder, paddle::Tensor& seq_lens_decoder,
    paddle::Tensor& seq_lens_this_time, paddle::Tensor& step_idx, paddle::Tensor& stop_flags,
    paddle::Tensor& accept_tokens, paddle::Tensor& accept_num, paddle::Tensor& draft_tokens,
    paddle::Tensor& token_ids_all, const paddle::Tensor& prompt_lens,
    const paddle::Tensor& is_block_step, const paddle::Tensor& max_dec_len,
    const paddle::Tensor& end_tokens) {
  const auto tokens_shape = matrix(kOp, "token_ids_all", token_ids_all, DataType::INT64);
  const int64_t batch = tokens_shape[0];
  const auto accept_shape = matrix(kOp, "accept_tokens", accept_tokens, DataType::INT64);
  expect_size(kOp, "accept_tokens", accept_shape[0], "rows", batch);
  if (accept_shape[1] < 1) fail(kOp, "argument 'accept_tokens' must have at least one column (K + 1)");
  const auto drafts_shape = matrix(kOp, "draft_tokens", draft_tokens, DataType::INT64);
  expect_size(kOp, "draft_tokens", drafts_shape[0], "rows", batch);
  expect_size(kOp, "draft_tokens", drafts_shape[1], "columns (accept_tokens has K + 1)", accept_shape[1]);
  expect_size(kOp, "seq_lens_encoder", per_request(kOp, "seq_lens_encoder", seq_lens_encoder, DataType::INT32), "rows", batch);
  expect_size(kOp, "seq_lens_decoder", per_request(kOp, "seq_lens_decoder", seq_lens_decoder, DataType::INT32), "rows", batch);
  expect_size(kOp, "seq_lens_this_time", per_request(kOp, "seq_lens_this_time", seq_lens_this_time, DataType::INT32), "rows", batch);
  expect_size(kOp, "step_idx", per_request(kOp, "step_idx", step_idx, DataType::INT64), "rows", batch);
  expect_size(kOp, "stop_flags", per_request(kOp, "stop_flags", stop_flags, DataType::BOOL), "rows", batch);
  expect_size(kOp, "accept_num", per_request(kOp, "accept_num", accept_num, DataType::INT32), "rows", batch);
  expect_size(kOp, "prompt_lens", per_request(kOp, "prompt_lens", prompt_lens, DataType::INT64), "rows", batch);
  expect_size(kOp, "is_block_step", per_request(kOp, "is_block_step", is_block_step, DataType::BOOL), "rows", batch);
  expect_size(kOp, "max_dec_len", per_request(kOp, "max_dec_len", max_dec_len, DataType::INT64), "rows", batch);
  expect_dtype(kOp, "end_tokens", end_tokens, DataType::INT64);
  if (end_tokens.shape().size() != 1 || end_tokens.shape()[0] < 1) {
    fail(kOp, "argument 'end_tokens' must have shape [E] with E >= 1, got " + shape_str(end_tokens.shape()));
  }
  expect_same_place(kOp, token_ids_all,
                    {{"seq_lens_encoder", &seq_lens_encoder}, {"seq_lens_decoder", &seq_lens_decoder},
                     {"seq_lens_this_time", &seq_lens_this_time}, {"step_idx", &step_idx},
                     {"stop_flags", &stop_flags}, {"accept_tokens", &accept_tokens},
                     {"accept_num", &accept_num}, {"draft_tokens", &draft_tokens},
                     {"prompt_lens", &prompt_lens}, {"is_block_step", &is_block_step},
                     {"max_dec_len", &max_dec_len}, {"end_tokens", &end_tokens}});

  auto has_running = paddle::empty({1}, DataType::BOOL, token_ids_all.place());
  fastspec::UpdateModelStatusParams params{};
  params.seq_lens_encoder = seq_lens_encoder.data<int32_t>();
  params.seq_lens_decoder = seq_lens_decoder.data<int32_t>();
  params.seq_lens_this_time = seq_lens_this_time.data<int32_t>();
  params.step_idx = step_idx.data<int64_t>();
  params.stop_flags = stop_flags.data<bool>();
  params.accept_tokens = accept_tokens.data<int64_t>();
  params.accept_num = accept_num.data<int32_t>();
  params.draft_tokens = draft_tokens.data<int64_t>();
  params.token_ids_all = token_ids_all.data<int64_t>();
  params.prompt_lens = prompt_lens.data<int64_t>();
  params.is_block_step = is_block_step.data<bool>();
  params.max_dec_len = max_dec_len.data<int64_t>();
  params.end_tokens = end_tokens.data<int64_t>();
  params.has_running = has_running.data<bool>();
  params.batch = batch;
  params.draft_cols = accept_shape[1];
  params.max_model_len = tokens_shape[1];
  params.num_end_tokens = end_tokens.shape()[0];

  if (token_ids_all.is_cpu()) {
    fastspec::update_model_status_cpu(params);
    return {has_running};
  }
#ifdef FASTSPEC_WITH_CUDA
  if (token_ids_all.is_gpu()) {
    if (batch > fastspec::kMaxCudaBatch) {
      fail(kOp, "batch of " + std::to_string(batch) + " slots exceeds the CUDA limit of " +
                    std::to_string(fastspec::kMaxCudaBatch));
    }
    expect_cuda_ok(kOp, fastspec::update_model_status_cuda(params, token_ids_all.stream()));
    return {has_running};
  }
#endif
  unsupported_place(kOp, token_ids_all);
}

using Shape = std::vector<int64_t>;

std::vector<Shape> UpdateShape(const Shape& seq_lens_encoder, const Shape& seq_lens_decoder,
                               const Shape& seq_lens_this_time, const Shape& step_idx,
                               const Shape& stop_flags, const Shape& accept_tokens,
                               const Shape& accept_num, const Shape& draft_tokens,
                               const Shape& token_ids_all, const Shape&, const Shape&, const Shape&,
                               const Shape&) {
  return {seq_lens_encoder, seq_lens_decoder, seq_lens_this_time, step_idx, stop_flags,
          accept_tokens,    accept_num,       draft_tokens,       token_ids_all, {1}};
}

using Dtype = paddle::DataType;

std::vector<Dtype> UpdateDtype(Dtype seq_lens_encoder, Dtype seq_lens_decoder,
                               Dtype seq_lens_this_time, Dtype step_idx, Dtype stop_flags,
                               Dtype accept_tokens, Dtype accept_num, Dtype draft_tokens,
                               Dtype token_ids_all, Dtype, Dtype, Dtype, Dtype) {
  return {seq_lens_encoder, seq_lens_decoder, seq_lens_this_time, step_idx, stop_flags,
          accept_tokens,    accept_num,       draft_tokens,       token_ids_all, Dtype::BOOL};
}

}  // namespace

PD_BUILD_OP(fastspec_update_model_status)
    .Inputs({"seq_lens_encoder", "seq_lens_decoder", "seq_lens_this_time", "step_idx",
             "stop_flags", "accept_tokens", "accept_num", "draft_tokens", "token_ids_all",
             "prompt_lens", "is_block_step", "max_dec_len", "end_tokens"})
    .Outputs({"seq_lens_encoder_out", "seq_lens_decoder_out", "seq_lens_this_time_out",
              "step_idx_out", "stop_flags_out", "accept_tokens_out", "accept_num_out",
              "draft_tokens_out", "token_ids_all_out", "has_running"})
    .SetInplaceMap({{"seq_lens_encoder", "seq_lens_encoder_out"},
                    {"seq_lens_decoder", "seq_lens_decoder_out"},
                    {"seq_lens_this_time", "seq_lens_this_time_out"},
                    {"step_idx", "step_idx_out"},
                    {"stop_flags", "stop_flags_out"},
                    {"accept_tokens", "accept_tokens_out"},
                    {"accept_num", "accept_num_out"},
                    {"draft_tokens", "draft_tokens_out"},
                    {"token_ids_all", "token_ids_all_out"}})
    .SetKernelFn(PD_KERNEL(UpdateModelStatus))
    .SetInferShapeFn(PD_INFER_SHAPE(UpdateShape))
    .SetInferDtypeFn(PD_INFER_DTYPE(UpdateDtype));

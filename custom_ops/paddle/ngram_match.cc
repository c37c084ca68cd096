// Paddle registration of ngram_match: checks, shapes, in-place map, dispatch.
#include "checks.h"
#include "fastspec/ngram_append.h"
#include "fastspec/ngram_match.h"

namespace {

using paddle::DataType;
using namespace fastspec_paddle;

// ngram_match and ngram_append share inputs, checks and parameters; `append`
// picks the launchers (and the op name in error messages).
void RunNgram(bool append, const paddle::Tensor& token_ids_all, const paddle::Tensor& prompt_lens,
              const paddle::Tensor& step_idx, const paddle::Tensor& draft_token_num,
              paddle::Tensor& draft_tokens, paddle::Tensor& seq_lens_this_time,
              const paddle::Tensor& seq_lens_encoder, const paddle::Tensor& seq_lens_decoder,
              const paddle::Tensor& max_dec_len, int max_ngram_size, int min_ngram_size,
              int token_budget) {
  const char* kOp = append ? "ngram_append" : "ngram_match";
  const auto tokens_shape = matrix(kOp, "token_ids_all", token_ids_all, DataType::INT64);
  const int64_t batch = tokens_shape[0];
  const auto drafts_shape = matrix(kOp, "draft_tokens", draft_tokens, DataType::INT64);
  expect_size(kOp, "draft_tokens", drafts_shape[0], "rows", batch);
  if (drafts_shape[1] < 1) fail(kOp, "argument 'draft_tokens' must have at least one column (K + 1)");
  if (tokens_shape[1] >= (int64_t{1} << 31)) fail(kOp, "argument 'token_ids_all' must have fewer than 2^31 columns");
  expect_size(kOp, "prompt_lens", per_request(kOp, "prompt_lens", prompt_lens, DataType::INT64), "rows", batch);
  expect_size(kOp, "step_idx", per_request(kOp, "step_idx", step_idx, DataType::INT64), "rows", batch);
  expect_size(kOp, "draft_token_num", per_request(kOp, "draft_token_num", draft_token_num, DataType::INT32), "rows", batch);
  expect_size(kOp, "seq_lens_this_time", per_request(kOp, "seq_lens_this_time", seq_lens_this_time, DataType::INT32), "rows", batch);
  expect_size(kOp, "seq_lens_encoder", per_request(kOp, "seq_lens_encoder", seq_lens_encoder, DataType::INT32), "rows", batch);
  expect_size(kOp, "seq_lens_decoder", per_request(kOp, "seq_lens_decoder", seq_lens_decoder, DataType::INT32), "rows", batch);
  expect_size(kOp, "max_dec_len", per_request(kOp, "max_dec_len", max_dec_len, DataType::INT64), "rows", batch);
  expect_attr(kOp, "max_ngram_size", max_ngram_size >= 1, ">= 1", max_ngram_size);
  expect_attr(kOp, "min_ngram_size", min_ngram_size >= 1 && min_ngram_size <= max_ngram_size,
              "in [1, max_ngram_size = " + std::to_string(max_ngram_size) + "]", min_ngram_size);
  expect_same_place(kOp, token_ids_all,
                    {{"prompt_lens", &prompt_lens}, {"step_idx", &step_idx},
                     {"draft_token_num", &draft_token_num}, {"draft_tokens", &draft_tokens},
                     {"seq_lens_this_time", &seq_lens_this_time},
                     {"seq_lens_encoder", &seq_lens_encoder},
                     {"seq_lens_decoder", &seq_lens_decoder}, {"max_dec_len", &max_dec_len}});

  fastspec::NgramMatchParams params{};
  params.token_ids_all = token_ids_all.data<int64_t>();
  params.prompt_lens = prompt_lens.data<int64_t>();
  params.step_idx = step_idx.data<int64_t>();
  params.draft_token_num = draft_token_num.data<int32_t>();
  params.draft_tokens = draft_tokens.data<int64_t>();
  params.seq_lens_this_time = seq_lens_this_time.data<int32_t>();
  params.seq_lens_encoder = seq_lens_encoder.data<int32_t>();
  params.seq_lens_decoder = seq_lens_decoder.data<int32_t>();
  params.max_dec_len = max_dec_len.data<int64_t>();
  params.batch = batch;
  params.max_model_len = tokens_shape[1];
  params.draft_cols = drafts_shape[1];
  params.max_ngram_size = max_ngram_size;
  params.min_ngram_size = min_ngram_size;
  params.token_budget = token_budget;

  if (token_ids_all.is_cpu()) {
    append ? fastspec::ngram_append_cpu(params) : fastspec::ngram_match_cpu(params);
    return;
  }
#ifdef FASTSPEC_WITH_CUDA
  if (token_ids_all.is_gpu()) {
    if (batch > fastspec::kMaxCudaBatch) {
      fail(kOp, "batch of " + std::to_string(batch) + " slots exceeds the CUDA limit of " +
                    std::to_string(fastspec::kMaxCudaBatch));
    }
    expect_cuda_ok(kOp, append ? fastspec::ngram_append_cuda(params, token_ids_all.stream())
                               : fastspec::ngram_match_cuda(params, token_ids_all.stream()));
    return;
  }
#endif
  unsupported_place(kOp, token_ids_all);
}

void NgramMatch(const paddle::Tensor& token_ids_all, const paddle::Tensor& prompt_lens,
                const paddle::Tensor& step_idx, const paddle::Tensor& draft_token_num,
                paddle::Tensor& draft_tokens, paddle::Tensor& seq_lens_this_time,
                const paddle::Tensor& seq_lens_encoder, const paddle::Tensor& seq_lens_decoder,
                const paddle::Tensor& max_dec_len, int max_ngram_size, int min_ngram_size,
                int token_budget) {
  RunNgram(false, token_ids_all, prompt_lens, step_idx, draft_token_num, draft_tokens,
           seq_lens_this_time, seq_lens_encoder, seq_lens_decoder, max_dec_len, max_ngram_size,
           min_ngram_size, token_budget);
}

void NgramAppend(const paddle::Tensor& token_ids_all, const paddle::Tensor& prompt_lens,
                 const paddle::Tensor& step_idx, const paddle::Tensor& draft_token_num,
                 paddle::Tensor& draft_tokens, paddle::Tensor& seq_lens_this_time,
                 const paddle::Tensor& seq_lens_encoder, const paddle::Tensor& seq_lens_decoder,
                 const paddle::Tensor& max_dec_len, int max_ngram_size, int min_ngram_size,
                 int token_budget) {
  RunNgram(true, token_ids_all, prompt_lens, step_idx, draft_token_num, draft_tokens,
           seq_lens_this_time, seq_lens_encoder, seq_lens_decoder, max_dec_len, max_ngram_size,
           min_ngram_size, token_budget);
}

std::vector<std::vector<int64_t>> NgramMatchShape(
    const std::vector<int64_t>&, const std::vector<int64_t>&, const std::vector<int64_t>&,
    const std::vector<int64_t>&, const std::vector<int64_t>& draft_tokens,
    const std::vector<int64_t>& seq_lens_this_time, const std::vector<int64_t>&,
    const std::vector<int64_t>&, const std::vector<int64_t>&) {
  return {draft_tokens, seq_lens_this_time};
}

std::vector<paddle::DataType> NgramMatchDtype(paddle::DataType, paddle::DataType, paddle::DataType,
                                              paddle::DataType, paddle::DataType draft_tokens,
                                              paddle::DataType seq_lens_this_time, paddle::DataType,
                                              paddle::DataType, paddle::DataType) {
  return {draft_tokens, seq_lens_this_time};
}

}  // namespace

PD_BUILD_OP(fastspec_ngram_match)
    .Inputs({"token_ids_all", "prompt_lens", "step_idx", "draft_token_num", "draft_tokens",
             "seq_lens_this_time", "seq_lens_encoder", "seq_lens_decoder", "max_dec_len"})
    .Outputs({"draft_tokens_out", "seq_lens_this_time_out"})
    .Attrs({"max_ngram_size: int", "min_ngram_size: int", "token_budget: int"})
    .SetInplaceMap({{"draft_tokens", "draft_tokens_out"},
                    {"seq_lens_this_time", "seq_lens_this_time_out"}})
    .SetKernelFn(PD_KERNEL(NgramMatch))
    .SetInferShapeFn(PD_INFER_SHAPE(NgramMatchShape))
    .SetInferDtypeFn(PD_INFER_DTYPE(NgramMatchDtype));

PD_BUILD_OP(fastspec_ngram_append)
    .Inputs({"token_ids_all", "prompt_lens", "step_idx", "draft_token_num", "draft_tokens",
             "seq_lens_this_time", "seq_lens_encoder", "seq_lens_decoder", "max_dec_len"})
    .Outputs({"draft_tokens_out", "seq_lens_this_time_out"})
    .Attrs({"max_ngram_size: int", "min_ngram_size: int", "token_budget: int"})
    .SetInplaceMap({{"draft_tokens", "draft_tokens_out"},
                    {"seq_lens_this_time", "seq_lens_this_time_out"}})
    .SetKernelFn(PD_KERNEL(NgramAppend))
    .SetInferShapeFn(PD_INFER_SHAPE(NgramMatchShape))
    .SetInferDtypeFn(PD_INFER_DTYPE(NgramMatchDtype));

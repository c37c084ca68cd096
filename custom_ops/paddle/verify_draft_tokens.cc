// Paddle registration of verify_draft_tokens: checks, shapes, in-place map,
// dispatch on place.
#include <algorithm>
#include <cctype>

#include "checks.h"
#include "fastspec/verify_draft_tokens.h"

namespace {

constexpr const char* kOp = "verify_draft_tokens";
using paddle::DataType;
using namespace fastspec_paddle;

int32_t parse_strategy(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "topp") return fastspec::kVerifyTopp;
  if (lower == "greedy") return fastspec::kVerifyGreedy;
  if (lower == "target_match") return fastspec::kVerifyTargetMatch;
  if (lower == "rejection") return fastspec::kVerifyRejection;
  fail(kOp, "attribute 'strategy' must be one of \"topp\", \"greedy\", \"target_match\", \"rejection\", got \"" +
                name + "\"");
}

// Paddle hands an empty tensor (T == 0) to the kernel as an absent optional,
// so absence here means "no rows"; the Python wrapper rejects a real None.
bool present(const paddle::optional<paddle::Tensor>& t) { return static_cast<bool>(t); }

// REJECTION's probability rows: [T, V], f32 / f16 / bf16, both the same.
int32_t prob_dtype(const char* name, const paddle::Tensor& t) {
  switch (t.dtype()) {
    case DataType::FLOAT32: return fastspec::kProbF32;
    case DataType::FLOAT16: return fastspec::kProbF16;
    case DataType::BFLOAT16: return fastspec::kProbBF16;
    default:
      fail(kOp, std::string("argument '") + name + "' must be float32, float16 or bfloat16, got " + dtype_name(t.dtype()));
  }
}

void set_rejection_rows(fastspec::VerifyDraftTokensParams& params, const paddle::Tensor& accept_tokens,
                        const paddle::Tensor& target_probs, const paddle::Tensor& draft_probs) {
  const auto p_shape = target_probs.shape();
  const auto q_shape = draft_probs.shape();
  if (p_shape.size() != 2) fail(kOp, "argument 'target_probs' must have shape [T, V], got " + shape_str(p_shape));
  if (q_shape.size() != 2) fail(kOp, "argument 'draft_probs' must have shape [T, V], got " + shape_str(q_shape));
  const int32_t dtype = prob_dtype("target_probs", target_probs);
  if (draft_probs.dtype() != target_probs.dtype()) {
    fail(kOp, "argument 'draft_probs' must have the dtype of target_probs (" + dtype_name(target_probs.dtype()) +
                  "), got " + dtype_name(draft_probs.dtype()));
  }
  expect_size(kOp, "draft_probs", q_shape[0], "rows (target_probs has T)", p_shape[0]);
  expect_size(kOp, "draft_probs", q_shape[1], "columns (target_probs has V)", p_shape[1]);
  if (p_shape[1] < 1) fail(kOp, "argument 'target_probs' must have at least one column (V)");
  expect_same_place(kOp, accept_tokens, {{"target_probs", &target_probs}, {"draft_probs", &draft_probs}});
  params.rejection.target_probs = target_probs.data();
  params.rejection.draft_probs = draft_probs.data();
  params.rejection.dtype = dtype;
  params.rejection.vocab = p_shape[1];
  params.rows = p_shape[0];
}

void VerifyDraftTokens(paddle::Tensor& accept_tokens, paddle::Tensor& accept_num,
                       const paddle::Tensor& draft_tokens,
                       const paddle::optional<paddle::Tensor>& target_tokens,
                       const paddle::optional<paddle::Tensor>& candidate_ids,
                       const paddle::optional<paddle::Tensor>& candidate_scores,
                       const paddle::optional<paddle::Tensor>& candidate_lens,
                       const paddle::Tensor& seed, const paddle::Tensor& step_idx,
                       const paddle::Tensor& stop_flags, const paddle::Tensor& is_block_step,
                       const paddle::Tensor& seq_lens_encoder,
                       const paddle::Tensor& seq_lens_this_time,
                       const paddle::Tensor& cu_seqlens_q_output,
                       const paddle::optional<paddle::Tensor>& reasoning_status,
                       const paddle::Tensor& max_dec_len, const paddle::Tensor& end_tokens,
                       const paddle::optional<paddle::Tensor>& target_probs,
                       const paddle::optional<paddle::Tensor>& draft_probs,
                       const std::string& strategy, bool accept_all, bool reject_all) {
  const int32_t kind = parse_strategy(strategy);
  const auto accept_shape = matrix(kOp, "accept_tokens", accept_tokens, DataType::INT64);
  const int64_t batch = accept_shape[0];
  if (accept_shape[1] < 1) fail(kOp, "argument 'accept_tokens' must have at least one column (K + 1)");
  const auto drafts_shape = matrix(kOp, "draft_tokens", draft_tokens, DataType::INT64);
  expect_size(kOp, "draft_tokens", drafts_shape[0], "rows", batch);
  expect_size(kOp, "draft_tokens", drafts_shape[1], "columns (accept_tokens has K + 1)", accept_shape[1]);
  expect_size(kOp, "accept_num", per_request(kOp, "accept_num", accept_num, DataType::INT32), "rows", batch);
  expect_size(kOp, "seed", per_request(kOp, "seed", seed, DataType::INT64), "rows", batch);
  expect_size(kOp, "step_idx", per_request(kOp, "step_idx", step_idx, DataType::INT64), "rows", batch);
  expect_size(kOp, "stop_flags", per_request(kOp, "stop_flags", stop_flags, DataType::BOOL), "rows", batch);
  expect_size(kOp, "is_block_step", per_request(kOp, "is_block_step", is_block_step, DataType::BOOL), "rows", batch);
  expect_size(kOp, "seq_lens_encoder", per_request(kOp, "seq_lens_encoder", seq_lens_encoder, DataType::INT32), "rows", batch);
  expect_size(kOp, "seq_lens_this_time", per_request(kOp, "seq_lens_this_time", seq_lens_this_time, DataType::INT32), "rows", batch);
  expect_size(kOp, "max_dec_len", per_request(kOp, "max_dec_len", max_dec_len, DataType::INT64), "rows", batch);
  expect_dtype(kOp, "cu_seqlens_q_output", cu_seqlens_q_output, DataType::INT32);
  if (cu_seqlens_q_output.shape().size() != 1) {
    fail(kOp, "argument 'cu_seqlens_q_output' must have shape [B + 1], got " + shape_str(cu_seqlens_q_output.shape()));
  }
  expect_size(kOp, "cu_seqlens_q_output", cu_seqlens_q_output.shape()[0], "entries (B + 1)", batch + 1);
  expect_dtype(kOp, "end_tokens", end_tokens, DataType::INT64);
  if (end_tokens.shape().size() != 1 || end_tokens.shape()[0] < 1) {
    fail(kOp, "argument 'end_tokens' must have shape [E] with E >= 1, got " + shape_str(end_tokens.shape()));
  }
  std::initializer_list<std::pair<const char*, const paddle::Tensor*>> fixed = {
      {"accept_num", &accept_num}, {"draft_tokens", &draft_tokens}, {"seed", &seed},
      {"step_idx", &step_idx}, {"stop_flags", &stop_flags}, {"is_block_step", &is_block_step},
      {"seq_lens_encoder", &seq_lens_encoder}, {"seq_lens_this_time", &seq_lens_this_time},
      {"cu_seqlens_q_output", &cu_seqlens_q_output}, {"max_dec_len", &max_dec_len},
      {"end_tokens", &end_tokens}};
  expect_same_place(kOp, accept_tokens, fixed);

  fastspec::VerifyDraftTokensParams params{};
  if (reasoning_status) {
    expect_size(kOp, "reasoning_status",
                per_request(kOp, "reasoning_status", *reasoning_status, DataType::INT32), "rows", batch);
    expect_same_place(kOp, accept_tokens, {{"reasoning_status", &*reasoning_status}});
    params.reasoning_status = reasoning_status->data<int32_t>();
  }
  params.rows = 0;  // no rows: every slot is skipped and nothing below is read
  if (kind == fastspec::kVerifyTopp && present(candidate_ids) && present(candidate_scores) &&
      present(candidate_lens)) {
    const auto& ids = *candidate_ids;
    const auto& scores = *candidate_scores;
    const auto& lens = *candidate_lens;
    const auto ids_shape = matrix(kOp, "candidate_ids", ids, DataType::INT64);
    const auto scores_shape = matrix(kOp, "candidate_scores", scores, DataType::FLOAT32);
    expect_size(kOp, "candidate_scores", scores_shape[0], "rows (candidate_ids has T)", ids_shape[0]);
    expect_size(kOp, "candidate_scores", scores_shape[1], "columns (candidate_ids has K')", ids_shape[1]);
    expect_dtype(kOp, "candidate_lens", lens, DataType::INT32);
    if (lens.shape().size() != 1) fail(kOp, "argument 'candidate_lens' must have shape [T], got " + shape_str(lens.shape()));
    expect_size(kOp, "candidate_lens", lens.shape()[0], "rows (candidate_ids has T)", ids_shape[0]);
    expect_same_place(kOp, accept_tokens,
                      {{"candidate_ids", &ids}, {"candidate_scores", &scores}, {"candidate_lens", &lens}});
    params.candidate_ids = ids.data<int64_t>();
    params.candidate_scores = scores.data<float>();
    params.candidate_lens = lens.data<int32_t>();
    params.rows = ids_shape[0];
    params.candidate_cols = ids_shape[1];
  } else if (kind == fastspec::kVerifyRejection) {
    if (present(target_probs) && present(draft_probs)) {
      set_rejection_rows(params, accept_tokens, *target_probs, *draft_probs);
    } else if (present(target_probs) != present(draft_probs)) {
      // one absent (a real None is rejected in Python; an empty one means T == 0)
      const auto& given = present(target_probs) ? *target_probs : *draft_probs;
      if (given.numel() > 0) {
        fail(kOp, std::string("argument '") + (present(target_probs) ? "draft_probs" : "target_probs") +
                      "' is required by strategy 'rejection' (its partner has " + shape_str(given.shape()) + ")");
      }
    }
  } else if (kind != fastspec::kVerifyTopp && present(target_tokens)) {
    const auto& targets = *target_tokens;
    expect_dtype(kOp, "target_tokens", targets, DataType::INT64);
    const auto shape = targets.shape();
    if (!(shape.size() == 1 || (shape.size() == 2 && shape[1] == 1))) {
      fail(kOp, "argument 'target_tokens' must have shape [T] or [T, 1], got " + shape_str(shape));
    }
    expect_same_place(kOp, accept_tokens, {{"target_tokens", &targets}});
    params.target_tokens = targets.data<int64_t>();
    params.rows = shape[0];
  }

  params.accept_tokens = accept_tokens.data<int64_t>();
  params.accept_num = accept_num.data<int32_t>();
  params.draft_tokens = draft_tokens.data<int64_t>();
  params.seed = seed.data<int64_t>();
  params.step_idx = step_idx.data<int64_t>();
  params.stop_flags = stop_flags.data<bool>();
  params.is_block_step = is_block_step.data<bool>();
  params.seq_lens_encoder = seq_lens_encoder.data<int32_t>();
  params.seq_lens_this_time = seq_lens_this_time.data<int32_t>();
  params.cu_seqlens_q_output = cu_seqlens_q_output.data<int32_t>();
  params.max_dec_len = max_dec_len.data<int64_t>();
  params.end_tokens = end_tokens.data<int64_t>();
  params.batch = batch;
  params.draft_cols = accept_shape[1];
  params.num_end_tokens = end_tokens.shape()[0];
  params.strategy = kind;
  params.accept_all = accept_all;
  params.reject_all = reject_all;

  if (accept_tokens.is_cpu()) {
    if (fastspec::verify_draft_tokens_cpu(params) != fastspec::kOk) fail(kOp, "unsupported strategy");
    return;
  }
#ifdef FASTSPEC_WITH_CUDA
  if (accept_tokens.is_gpu()) {
    if (batch > fastspec::kMaxCudaBatch) {
      fail(kOp, "batch of " + std::to_string(batch) + " slots exceeds the CUDA limit of " +
                    std::to_string(fastspec::kMaxCudaBatch));
    }
    expect_cuda_ok(kOp, fastspec::verify_draft_tokens_cuda(params, accept_tokens.stream()));
    return;
  }
#endif
  unsupported_place(kOp, accept_tokens);
}

using Shape = std::vector<int64_t>;
using OptShape = paddle::optional<std::vector<int64_t>>;

std::vector<Shape> VerifyShape(const Shape& accept_tokens, const Shape& accept_num, const Shape&,
                               const OptShape&, const OptShape&, const OptShape&, const OptShape&,
                               const Shape&, const Shape&, const Shape&, const Shape&, const Shape&,
                               const Shape&, const Shape&, const OptShape&, const Shape&,
                               const Shape&, const OptShape&, const OptShape&) {
  return {accept_tokens, accept_num};
}

using Dtype = paddle::DataType;
using OptDtype = paddle::optional<paddle::DataType>;

std::vector<Dtype> VerifyDtype(Dtype accept_tokens, Dtype accept_num, Dtype, const OptDtype&,
                               const OptDtype&, const OptDtype&, const OptDtype&, Dtype, Dtype,
                               Dtype, Dtype, Dtype, Dtype, Dtype, const OptDtype&, Dtype, Dtype,
                               const OptDtype&, const OptDtype&) {
  return {accept_tokens, accept_num};
}

}  // namespace

PD_BUILD_OP(fastspec_verify_draft_tokens)
    .Inputs({"accept_tokens", "accept_num", "draft_tokens", paddle::Optional("target_tokens"),
             paddle::Optional("candidate_ids"), paddle::Optional("candidate_scores"),
             paddle::Optional("candidate_lens"), "seed", "step_idx", "stop_flags", "is_block_step",
             "seq_lens_encoder", "seq_lens_this_time", "cu_seqlens_q_output",
             paddle::Optional("reasoning_status"), "max_dec_len", "end_tokens",
             paddle::Optional("target_probs"), paddle::Optional("draft_probs")})
    .Outputs({"accept_tokens_out", "accept_num_out"})
    .Attrs({"strategy: std::string", "accept_all: bool", "reject_all: bool"})
    .SetInplaceMap({{"accept_tokens", "accept_tokens_out"}, {"accept_num", "accept_num_out"}})
    .SetKernelFn(PD_KERNEL(VerifyDraftTokens))
    .SetInferShapeFn(PD_INFER_SHAPE(VerifyShape))
    .SetInferDtypeFn(PD_INFER_DTYPE(VerifyDtype));

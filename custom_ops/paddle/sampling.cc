// Paddle registration of top_p_candidates and sample_tokens: checks, shapes,
// dtypes, dispatch. Outputs are new tensors allocated once per call with
// paddle::empty on the place of probs (no in-place inputs); the launchers
// write every element of them. Inside a Paddle CUDA Graph capture the
// allocation comes from the graph's memory pool, and the kernels read seeds,
// positions and top-p/top-k from device tensors, so a replay with new values
// in those tensors samples afresh (docs/ops/sampling.md).
#include "checks.h"
#include "fastspec/sampling.h"

namespace {

using paddle::DataType;
using namespace fastspec_paddle;

int32_t prob_dtype(const char* op, const paddle::Tensor& probs) {
  switch (probs.dtype()) {
    case DataType::FLOAT32: return fastspec::kProbF32;
    case DataType::FLOAT16: return fastspec::kProbF16;
    case DataType::BFLOAT16: return fastspec::kProbBF16;
    default:
      fail(op, "argument 'probs' must be float32, float16 or bfloat16, got " + dtype_name(probs.dtype()));
  }
}

std::vector<int64_t> probs_shape(const char* op, const paddle::Tensor& probs) {
  const auto shape = probs.shape();
  if (shape.size() != 2) fail(op, "argument 'probs' must have rank 2 [T, V], got shape " + shape_str(shape));
  if (shape[1] < 1 || shape[1] >= (int64_t{1} << 31)) {
    fail(op, "argument 'probs' must have 1 <= V < 2^31 columns, got " + std::to_string(shape[1]));
  }
  return shape;
}

int64_t row_vector(const char* op, const char* name, const paddle::Tensor& t, DataType dtype) {
  expect_dtype(op, name, t, dtype);
  const auto shape = t.shape();
  if (shape.size() != 1) fail(op, std::string("argument '") + name + "' must have rank 1, got shape " + shape_str(shape));
  return shape[0];
}

// ---- top_p_candidates ---------------------------------------------------------

constexpr const char* kCand = "top_p_candidates";

std::vector<paddle::Tensor> TopPCandidates(const paddle::Tensor& probs, const paddle::Tensor& top_p,
                                           const paddle::Tensor& batch_id_per_token_output,
                                           int max_candidate_len) {
  const auto shape = probs_shape(kCand, probs);
  const int32_t dtype = prob_dtype(kCand, probs);
  const int64_t rows = shape[0], vocab = shape[1];
  const int64_t batch = per_request(kCand, "top_p", top_p, DataType::FLOAT32);
  expect_size(kCand, "batch_id_per_token_output",
              row_vector(kCand, "batch_id_per_token_output", batch_id_per_token_output, DataType::INT32),
              "rows", rows);
  const int64_t kmax = std::min<int64_t>(vocab, fastspec::kMaxCandidateLen);
  expect_attr(kCand, "max_candidate_len", max_candidate_len >= 1 && max_candidate_len <= kmax,
              "in [1, min(V, 1024) = " + std::to_string(kmax) + "]", max_candidate_len);
  expect_same_place(kCand, probs, {{"top_p", &top_p}, {"batch_id_per_token_output", &batch_id_per_token_output}});

  auto ids = paddle::empty({rows, max_candidate_len}, DataType::INT64, probs.place());
  auto scores = paddle::empty({rows, max_candidate_len}, DataType::FLOAT32, probs.place());
  auto lens = paddle::empty({rows}, DataType::INT32, probs.place());

  fastspec::TopPCandidatesParams params{};
  params.probs = probs.data();
  params.probs_dtype = dtype;
  params.top_p = top_p.data<float>();
  params.batch_id_per_token_output = batch_id_per_token_output.data<int32_t>();
  params.candidate_ids = ids.data<int64_t>();
  params.candidate_scores = scores.data<float>();
  params.candidate_lens = lens.data<int32_t>();
  params.rows = rows;
  params.vocab = vocab;
  params.batch = batch;
  params.max_candidate_len = max_candidate_len;
  params.num_threads = 0;

  if (probs.is_cpu()) {
    if (fastspec::top_p_candidates_cpu(params) != fastspec::kOk) fail(kCand, "invalid sizes");
    return {ids, scores, lens};
  }
#ifdef FASTSPEC_WITH_CUDA
  if (probs.is_gpu()) {
    expect_cuda_ok(kCand, fastspec::top_p_candidates_cuda(params, probs.stream()));
    return {ids, scores, lens};
  }
#endif
  unsupported_place(kCand, probs);
}

std::vector<std::vector<int64_t>> TopPCandidatesShape(const std::vector<int64_t>& probs,
                                                      const std::vector<int64_t>&,
                                                      const std::vector<int64_t>&,
                                                      int max_candidate_len) {
  const int64_t rows = probs.empty() ? -1 : probs[0];
  return {{rows, max_candidate_len}, {rows, max_candidate_len}, {rows}};
}

std::vector<DataType> TopPCandidatesDtype(DataType, DataType, DataType) {
  return {DataType::INT64, DataType::FLOAT32, DataType::INT32};
}

// ---- sample_tokens ------------------------------------------------------------

constexpr const char* kSample = "sample_tokens";

std::vector<paddle::Tensor> SampleTokens(const paddle::Tensor& probs, const paddle::Tensor& top_p,
                                         const paddle::Tensor& top_k, const paddle::Tensor& seed,
                                         const paddle::Tensor& step_idx,
                                         const paddle::Tensor& batch_id_per_token_output,
                                         const paddle::Tensor& cu_seqlens_q_output, int rand_stream) {
  const auto shape = probs_shape(kSample, probs);
  const int32_t dtype = prob_dtype(kSample, probs);
  const int64_t rows = shape[0], vocab = shape[1];
  const int64_t batch = per_request(kSample, "top_p", top_p, DataType::FLOAT32);
  expect_size(kSample, "top_k", per_request(kSample, "top_k", top_k, DataType::INT32), "rows", batch);
  expect_size(kSample, "seed", per_request(kSample, "seed", seed, DataType::INT64), "rows", batch);
  expect_size(kSample, "step_idx", per_request(kSample, "step_idx", step_idx, DataType::INT64), "rows", batch);
  expect_size(kSample, "batch_id_per_token_output",
              row_vector(kSample, "batch_id_per_token_output", batch_id_per_token_output, DataType::INT32),
              "rows", rows);
  expect_size(kSample, "cu_seqlens_q_output",
              row_vector(kSample, "cu_seqlens_q_output", cu_seqlens_q_output, DataType::INT32),
              "rows", batch + 1);
  expect_same_place(kSample, probs,
                    {{"top_p", &top_p}, {"top_k", &top_k}, {"seed", &seed}, {"step_idx", &step_idx},
                     {"batch_id_per_token_output", &batch_id_per_token_output},
                     {"cu_seqlens_q_output", &cu_seqlens_q_output}});
  expect_attr(kSample, "rand_stream",
              rand_stream >= 0 && fastspec::sample_stream_ok(static_cast<uint32_t>(rand_stream)),
              "TARGET (1) or DRAFT (5)", rand_stream);

  auto tokens = paddle::empty({rows}, DataType::INT64, probs.place());

  fastspec::SampleTokensParams params{};
  params.probs = probs.data();
  params.probs_dtype = dtype;
  params.top_p = top_p.data<float>();
  params.top_k = top_k.data<int32_t>();
  params.seed = seed.data<int64_t>();
  params.step_idx = step_idx.data<int64_t>();
  params.batch_id_per_token_output = batch_id_per_token_output.data<int32_t>();
  params.cu_seqlens_q_output = cu_seqlens_q_output.data<int32_t>();
  params.tokens = tokens.data<int64_t>();
  params.rows = rows;
  params.vocab = vocab;
  params.batch = batch;
  params.num_threads = 0;
  params.stream = static_cast<uint32_t>(rand_stream);

  if (probs.is_cpu()) {
    if (fastspec::sample_tokens_cpu(params) != fastspec::kOk) fail(kSample, "invalid sizes");
    return {tokens};
  }
#ifdef FASTSPEC_WITH_CUDA
  if (probs.is_gpu()) {
    expect_cuda_ok(kSample, fastspec::sample_tokens_cuda(params, probs.stream()));
    return {tokens};
  }
#endif
  unsupported_place(kSample, probs);
}

std::vector<std::vector<int64_t>> SampleTokensShape(
    const std::vector<int64_t>& probs, const std::vector<int64_t>&, const std::vector<int64_t>&,
    const std::vector<int64_t>&, const std::vector<int64_t>&, const std::vector<int64_t>&,
    const std::vector<int64_t>&) {
  return {{probs.empty() ? -1 : probs[0]}};
}

std::vector<DataType> SampleTokensDtype(DataType, DataType, DataType, DataType, DataType, DataType,
                                        DataType) {
  return {DataType::INT64};
}

}  // namespace

PD_BUILD_OP(fastspec_top_p_candidates)
    .Inputs({"probs", "top_p", "batch_id_per_token_output"})
    .Outputs({"candidate_ids", "candidate_scores", "candidate_lens"})
    .Attrs({"max_candidate_len: int"})
    .SetKernelFn(PD_KERNEL(TopPCandidates))
    .SetInferShapeFn(PD_INFER_SHAPE(TopPCandidatesShape))
    .SetInferDtypeFn(PD_INFER_DTYPE(TopPCandidatesDtype));

PD_BUILD_OP(fastspec_sample_tokens)
    .Inputs({"probs", "top_p", "top_k", "seed", "step_idx", "batch_id_per_token_output",
             "cu_seqlens_q_output"})
    .Outputs({"tokens"})
    .Attrs({"rand_stream: int"})  // TARGET or DRAFT; the Python wrapper defaults it to TARGET
    .SetKernelFn(PD_KERNEL(SampleTokens))
    .SetInferShapeFn(PD_INFER_SHAPE(SampleTokensShape))
    .SetInferDtypeFn(PD_INFER_DTYPE(SampleTokensDtype));

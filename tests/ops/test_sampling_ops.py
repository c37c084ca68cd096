"""top_p_candidates / sample_tokens: the Paddle ops against the numpy reference, and bad inputs."""

from __future__ import annotations

import numpy as np
import paddle
import pytest

import fastspec.ops as ops
from fastspec import reference as ref
from tests.helpers.raw_op import raw_op
from tests.helpers.sampling_cases import KINDS, TOP_P_ODD, TOP_PS, make_batch, make_probs, request_params, softmax
from tests.helpers.static_graph import run_static


def as_paddle_probs(probs: np.ndarray, dtype: str) -> tuple[paddle.Tensor, np.ndarray]:
    """A Paddle tensor of the dtype, and the array the reference reads (bf16 as uint16 bits)."""
    tensor = paddle.to_tensor(probs)
    if dtype != "float32":
        tensor = tensor.astype(dtype)
    return tensor, tensor.numpy()


def candidates_case(seed=0, vocab=300, rows=None):
    rng = np.random.default_rng(seed)
    rows = rows or 2 * len(KINDS)
    probs = make_probs(rng, vocab, rows)
    top_p = np.array(TOP_PS + TOP_P_ODD, np.float32)
    batch_id = rng.integers(-1, len(top_p) + 1, rows).astype(np.int32)
    return probs, top_p, batch_id


def sample_case(seed=0, vocab=300):
    rng = np.random.default_rng(seed)
    cu, batch_id = make_batch(rng, [1, 2, 3, 1, 4, 2], padding_rows=2)
    probs = make_probs(rng, vocab, len(batch_id))
    return (probs, *request_params(rng, 6, vocab), batch_id, cu)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("vocab,k", [(1, 1), (7, 5), (300, 64), (2000, 1024)])
def test_candidates_op_matches_reference(dtype, vocab, k):
    probs, top_p, batch_id = candidates_case(vocab + k, vocab)
    tensor, host = as_paddle_probs(probs, dtype)
    ids, scores, lens = ops.top_p_candidates(
        tensor, paddle.to_tensor(top_p), paddle.to_tensor(batch_id), max_candidate_len=k
    )
    e_ids, e_scores, e_lens = ref.top_p_candidates(host, top_p, batch_id, max_candidate_len=k)
    assert ids.dtype == paddle.int64 and scores.dtype == paddle.float32 and lens.dtype == paddle.int32
    assert ids.shape == [len(probs), k] and lens.shape == [len(probs)]
    np.testing.assert_array_equal(ids.numpy(), e_ids)
    np.testing.assert_array_equal(scores.numpy().view(np.uint32), e_scores.view(np.uint32))
    np.testing.assert_array_equal(lens.numpy(), e_lens)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("vocab", [1, 7, 300, 32000])
def test_sample_op_matches_reference(dtype, vocab):
    probs, top_p, top_k, seed, step, batch_id, cu = sample_case(vocab, vocab)
    tensor, host = as_paddle_probs(probs, dtype)
    tokens = ops.sample_tokens(tensor, *(paddle.to_tensor(x) for x in (top_p, top_k, seed, step, batch_id, cu)))
    assert tokens.dtype == paddle.int64 and tokens.shape == [len(probs)]
    np.testing.assert_array_equal(tokens.numpy(), ref.sample_tokens(host, top_p, top_k, seed, step, batch_id, cu))


def test_per_request_tensors_may_be_column_vectors():
    probs, top_p, top_k, seed, step, batch_id, cu = sample_case(3)
    col = [paddle.to_tensor(x.reshape(-1, 1)) for x in (top_p, top_k, seed, step)]
    tokens = ops.sample_tokens(paddle.to_tensor(probs), *col, paddle.to_tensor(batch_id), paddle.to_tensor(cu))
    np.testing.assert_array_equal(tokens.numpy(), ref.sample_tokens(probs, top_p, top_k, seed, step, batch_id, cu))
    ids, _, lens = ops.top_p_candidates(
        paddle.to_tensor(probs), col[0], paddle.to_tensor(batch_id), max_candidate_len=8
    )
    e_ids, _, e_lens = ref.top_p_candidates(probs, top_p, batch_id, max_candidate_len=8)
    np.testing.assert_array_equal(ids.numpy(), e_ids)
    np.testing.assert_array_equal(lens.numpy(), e_lens)


def test_empty_batch_of_rows():
    probs = np.zeros((0, 10), np.float32)
    ids, scores, lens = ops.top_p_candidates(
        paddle.to_tensor(probs),
        paddle.to_tensor(np.ones(2, np.float32)),
        paddle.to_tensor(np.zeros(0, np.int32)),
        max_candidate_len=3,
    )
    assert ids.shape == [0, 3] and lens.shape == [0]


# ---- bad inputs ------------------------------------------------------------------------------


def _cand_args(**over):
    probs, top_p, batch_id = candidates_case(1, 50, rows=4)
    args = {"probs": probs, "top_p": top_p, "batch_id_per_token_output": batch_id}
    args.update(over)
    return args


@pytest.mark.parametrize(
    "over, argument",
    [
        ({"probs": np.ones((4, 50), np.float64)}, "probs"),
        ({"probs": np.ones((4, 50), np.int64)}, "probs"),
        ({"probs": np.ones(50, np.float32)}, "probs"),
        ({"probs": np.ones((2, 2, 50), np.float32)}, "probs"),
        ({"top_p": np.ones(8, np.float64)}, "top_p"),
        ({"top_p": np.ones((8, 2), np.float32)}, "top_p"),
        ({"batch_id_per_token_output": np.zeros(4, np.int64)}, "batch_id_per_token_output"),
        ({"batch_id_per_token_output": np.zeros(5, np.int32)}, "batch_id_per_token_output"),
        ({"batch_id_per_token_output": np.zeros((4, 1), np.int32)}, "batch_id_per_token_output"),
    ],
)
def test_candidates_bad_inputs_name_the_argument(over, argument):
    args = {name: paddle.to_tensor(value) for name, value in _cand_args(**over).items()}
    with pytest.raises(ops.FastspecArgumentError, match=f"'{argument}'"):
        ops.top_p_candidates(*args.values(), max_candidate_len=4)
    # the C++ checks say the same without the Python wrapper
    with pytest.raises(ops.FastspecArgumentError, match=f"'{argument}'"):
        raw_op("top_p_candidates", args, {"max_candidate_len": 4})


@pytest.mark.parametrize(
    "k, error",
    [(0, ValueError), (51, ValueError), (1025, ValueError), (-3, ValueError), (2.0, TypeError), (True, TypeError)],
)
def test_max_candidate_len_out_of_range(k, error):
    args = {name: paddle.to_tensor(value) for name, value in _cand_args().items()}
    with pytest.raises(error, match="max_candidate_len"):
        ops.top_p_candidates(*args.values(), max_candidate_len=k)
    if isinstance(k, int) and not isinstance(k, bool):
        with pytest.raises(ops.FastspecArgumentError, match="max_candidate_len"):
            raw_op("top_p_candidates", args, {"max_candidate_len": k})


def test_max_candidate_len_upper_bound_is_1024():
    probs = np.full((1, 2000), 1 / 2000, np.float32)
    ids, _, lens = ops.top_p_candidates(
        paddle.to_tensor(probs),
        paddle.to_tensor(np.ones(1, np.float32)),
        paddle.to_tensor(np.zeros(1, np.int32)),
        max_candidate_len=1024,
    )
    assert lens.numpy().tolist() == [1024]
    assert ids.numpy()[0].tolist() == list(range(1024))  # exact ties: ids ascending


SAMPLE_NAMES = ("probs", "top_p", "top_k", "seed", "step_idx", "batch_id_per_token_output", "cu_seqlens_q_output")


@pytest.mark.parametrize(
    "name, value",
    [
        ("probs", np.ones((10, 300), np.float64)),
        ("probs", np.ones((10, 300, 1), np.float32)),
        ("top_p", np.ones(6, np.float64)),
        ("top_k", np.ones(6, np.int64)),
        ("top_k", np.ones(5, np.int32)),
        ("seed", np.ones(6, np.int32)),
        ("seed", np.ones(7, np.int64)),
        ("step_idx", np.ones((6, 2), np.int64)),
        ("batch_id_per_token_output", np.zeros(9, np.int32)),
        ("batch_id_per_token_output", np.zeros(10, np.float32)),
        ("cu_seqlens_q_output", np.zeros(6, np.int32)),
        ("cu_seqlens_q_output", np.zeros(7, np.int64)),
    ],
)
def test_sample_bad_inputs_name_the_argument(name, value):
    case = dict(zip(SAMPLE_NAMES, sample_case(2)))
    case["probs"] = case["probs"][:10]
    case["batch_id_per_token_output"] = case["batch_id_per_token_output"][:10]
    case[name] = value
    args = {n: paddle.to_tensor(v) for n, v in case.items()}
    with pytest.raises(ops.FastspecArgumentError, match=f"'{name}'"):
        ops.sample_tokens(*args.values())
    with pytest.raises(ops.FastspecArgumentError, match=f"'{name}'"):
        raw_op("sample_tokens", args, {"rand_stream": 1})


def test_static_graph_build_and_run():
    probs, top_p, top_k, seed, step, batch_id, cu = sample_case(4)
    arrays = dict(zip(SAMPLE_NAMES, (probs, top_p, top_k, seed, step, batch_id, cu)))
    got = run_static(
        arrays,
        lambda feeds: [
            ops.sample_tokens(*(feeds[n] for n in SAMPLE_NAMES)),
            *ops.top_p_candidates(
                feeds["probs"], feeds["top_p"], feeds["batch_id_per_token_output"], max_candidate_len=16
            ),
        ],
    )
    np.testing.assert_array_equal(got[0], ref.sample_tokens(probs, top_p, top_k, seed, step, batch_id, cu))
    for g, e in zip(got[1:], ref.top_p_candidates(probs, top_p, batch_id, max_candidate_len=16)):
        np.testing.assert_array_equal(g, e)


# ---- the random stream: TARGET (default) or DRAFT ----------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("vocab", [7, 300, 32000])
def test_sample_op_draft_stream_matches_reference(dtype, vocab):
    probs, top_p, top_k, seed, step, batch_id, cu = sample_case(vocab + 11, vocab)
    tensor, host = as_paddle_probs(probs, dtype)
    args = [paddle.to_tensor(x) for x in (top_p, top_k, seed, step, batch_id, cu)]
    draft = ops.sample_tokens(tensor, *args, rand_stream=ref.STREAM_DRAFT)
    np.testing.assert_array_equal(
        draft.numpy(), ref.sample_tokens(host, top_p, top_k, seed, step, batch_id, cu, stream=ref.STREAM_DRAFT)
    )
    target = ref.sample_tokens(host, top_p, top_k, seed, step, batch_id, cu)
    np.testing.assert_array_equal(ops.sample_tokens(tensor, *args, rand_stream=ref.STREAM_TARGET).numpy(), target)
    np.testing.assert_array_equal(ops.sample_tokens(tensor, *args).numpy(), target)


def test_sample_op_draft_stream_differs_from_target():
    rng = np.random.default_rng(31)
    requests, rows_each, vocab = 64, 4, 1000
    cu = np.arange(0, requests * rows_each + 1, rows_each, dtype=np.int32)
    batch_id = np.repeat(np.arange(requests, dtype=np.int32), rows_each)
    probs = np.stack([softmax(rng.normal(0, 0.05, vocab)) for _ in range(len(batch_id))]).astype(np.float32)
    seed = rng.integers(-(2**63), 2**63 - 1, requests, dtype=np.int64)
    step = rng.integers(0, 2**20, requests, dtype=np.int64)
    arrays = (probs, np.ones(requests, np.float32), np.zeros(requests, np.int32), seed, step, batch_id, cu)
    tensors = [paddle.to_tensor(x) for x in arrays]
    target = ops.sample_tokens(*tensors).numpy()
    draft = ops.sample_tokens(*tensors, rand_stream=ref.STREAM_DRAFT).numpy()
    np.testing.assert_array_equal(draft, ref.sample_tokens(*arrays, stream=ref.STREAM_DRAFT))
    assert (target >= 0).all() and (draft >= 0).all()
    assert (target != draft).mean() > 0.9  # ~1/1000 agree by chance


@pytest.mark.parametrize("bad", [0, 2, 3, 4, 6, -1, True, 5.0, "draft", None])
def test_sample_op_bad_stream_names_it(bad):
    args = [paddle.to_tensor(x) for x in sample_case(5)]
    with pytest.raises(ValueError, match="'rand_stream'"):
        ops.sample_tokens(*args, rand_stream=bad)


@pytest.mark.parametrize("bad", [0, 2, 4, 6, -1])
def test_sample_op_attribute_checked_in_cpp(bad):
    args = dict(zip(SAMPLE_NAMES, (paddle.to_tensor(x) for x in sample_case(6))))
    with pytest.raises(ops.FastspecArgumentError, match="'rand_stream'"):
        raw_op("sample_tokens", args, {"rand_stream": bad})


def test_static_graph_draft_stream():
    probs, top_p, top_k, seed, step, batch_id, cu = sample_case(8)
    arrays = dict(zip(SAMPLE_NAMES, (probs, top_p, top_k, seed, step, batch_id, cu)))
    got = run_static(
        arrays, lambda feeds: [ops.sample_tokens(*(feeds[n] for n in SAMPLE_NAMES), rand_stream=ref.STREAM_DRAFT)]
    )
    np.testing.assert_array_equal(
        got[0], ref.sample_tokens(probs, top_p, top_k, seed, step, batch_id, cu, stream=ref.STREAM_DRAFT)
    )

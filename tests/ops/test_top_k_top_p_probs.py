"""top_k_top_p_probs: the CPU kernel (pointer API) and the Paddle op against the numpy reference, bit for
bit, on random and edge rows; its set equals the one sample_tokens draws from; bad arguments are named."""

from __future__ import annotations

import numpy as np
import paddle
import pytest

import fastspec.ops as ops
from fastspec import arrays
from fastspec import reference as ref
from fastspec.reference.mass import prob_mass
from fastspec.reference.sampling import sample_set
from tests.helpers.raw_op import raw_op
from tests.helpers.sampling_cases import (
    KINDS,
    large_vocab_case,
    make_probs,
    probs_case,
    request_params,
    softmax,
    to_bf16_bits,
)
from tests.helpers.static_graph import run_static
from tests.ops.test_sampling_kernels import SOFTMAX_SHAPES, near_uniform_rows

NAMES = ("probs", "top_p", "top_k", "batch_id_per_token_output")


def run_cpu(probs, top_p, top_k, batch_id, num_threads=0):
    out = np.full(np.shape(probs), np.nan, np.float32)  # garbage: every element must be written
    arrays.top_k_top_p_probs(
        np.ascontiguousarray(probs), top_p, top_k, batch_id, target_probs=out, num_threads=num_threads
    )
    return out


def assert_bits(got: np.ndarray, want: np.ndarray, context: str = "") -> None:
    assert got.dtype == np.float32 and got.shape == want.shape
    differ = np.argwhere(got.view(np.uint32) != want.view(np.uint32))
    assert len(differ) == 0, f"{len(differ)} entries differ, first {differ[:4].tolist()} {context}"


# ---- the CPU kernel against the reference ---------------------------------------------------


@pytest.mark.parametrize("vocab", [1, 7, 100, 32000])
def test_matches_reference(vocab):
    rng = np.random.default_rng(vocab + 41)
    case = probs_case(rng, vocab, (1, 3, 2, 1, 4, 1, 2, 5) if vocab < 32000 else (1, 2, 1, 3, 2))
    want = ref.top_k_top_p_probs(*case)
    for threads in (1, 0):  # inline, and the pool
        assert_bits(run_cpu(*case, num_threads=threads), want, f"threads {threads}")


def test_large_vocab():
    probs, top_p, top_k, _, _, batch_id, _ = large_vocab_case(np.random.default_rng(5))
    assert_bits(run_cpu(probs, top_p, top_k, batch_id), ref.top_k_top_p_probs(probs, top_p, top_k, batch_id))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_dtypes(dtype):
    rng = np.random.default_rng(3)
    probs, top_p, top_k, batch_id = probs_case(rng, 3000)
    half = probs.astype(np.float16) if dtype == "float16" else to_bf16_bits(probs)
    assert_bits(run_cpu(half, top_p, top_k, batch_id), ref.top_k_top_p_probs(half, top_p, top_k, batch_id))


@pytest.mark.parametrize("shape", ["flat", "holes", "unrepresentative", "trend", *SOFTMAX_SHAPES])
@pytest.mark.parametrize("vocab", [4097, 151937])
def test_near_uniform_rows(shape, vocab):
    """Top-p sets that are most of the row: the CPU kernel's near-flat path writes them in one pass
    (8 entries at a time with AVX2, then the tail)."""
    rng = np.random.default_rng(vocab + len(shape))
    probs = near_uniform_rows(rng, vocab, 3, shape).astype(np.float32)
    top_p = np.array([0.9, 0.99, 0.5], np.float32)
    top_k = np.array([0, 0, 9000], np.int32)
    batch_id = np.arange(3, dtype=np.int32)
    want = ref.top_k_top_p_probs(probs, top_p, top_k, batch_id)
    for threads in (1, 0):
        assert_bits(run_cpu(probs, top_p, top_k, batch_id, threads), want)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_near_uniform_half_rows(dtype):
    """The near-flat write reads fp16 (here subnormal halves: 1/V < 2^-14) and bf16 like key_of."""
    rng = np.random.default_rng(len(dtype))
    probs = near_uniform_rows(rng, 50001, 3, "holes")
    half = probs.astype(np.float16) if dtype == "float16" else to_bf16_bits(probs)
    top_p = np.array([0.9, 0.99, 0.5], np.float32)
    top_k = np.zeros(3, np.int32)
    batch_id = np.arange(3, dtype=np.int32)
    assert_bits(run_cpu(half, top_p, top_k, batch_id), ref.top_k_top_p_probs(half, top_p, top_k, batch_id))


@pytest.mark.parametrize("top_k", [300, 8192, 8193, 20000])
def test_large_top_k(top_k):
    """top_k above the chunk-bound limit (8192) takes the histogram path; below it the fast path."""
    rng = np.random.default_rng(top_k)
    probs = make_probs(rng, 32000, 8, kinds=("peaked", "uniform", "ties", "zeros"))
    top_p = np.array([1.0, 0.9, 0.5, 1e-6], np.float32)
    batch_id = np.repeat(np.arange(4, dtype=np.int32), 2)
    top_k = np.full(4, top_k, np.int32)
    assert_bits(run_cpu(probs, top_p, top_k, batch_id), ref.top_k_top_p_probs(probs, top_p, top_k, batch_id))


def test_every_fp16_pattern_in_one_row():
    rng = np.random.default_rng(16)
    patterns = np.arange(1 << 16, dtype=np.uint16)
    rows = np.stack([rng.permutation(patterns) for _ in range(2)] + [patterns]).view(np.float16)
    top_p = np.array([1.0, 0.5, 1e-6], np.float32)
    top_k = np.array([0, 0, 7], np.int32)
    batch_id = np.arange(3, dtype=np.int32)
    assert_bits(run_cpu(rows, top_p, top_k, batch_id), ref.top_k_top_p_probs(rows, top_p, top_k, batch_id))


# ---- the rules, by hand and against sample_tokens ---------------------------------------------


def one_row(row, top_p, top_k):
    probs = np.asarray([row], np.float32)
    got = run_cpu(probs, np.array([top_p], np.float32), np.array([top_k], np.int32), np.zeros(1, np.int32))
    assert_bits(
        got,
        ref.top_k_top_p_probs(probs, np.array([top_p], np.float32), np.array([top_k], np.int32), np.zeros(1, np.int32)),
    )
    return got[0]


def test_the_rules_by_hand():
    quarters = [0.25, 0.25, 0.0, 0.25, 0.25]  # exact ties: smaller ids first
    assert one_row(quarters, 1.0, 2).tolist() == [0.5, 0.5, 0.0, 0.0, 0.0]
    assert one_row(quarters, 0.5, 0).tolist() == [0.5, 0.5, 0.0, 0.0, 0.0]
    assert one_row(quarters, 1.0, 0).tolist() == [0.25, 0.25, 0.0, 0.25, 0.25]
    for top_k in (0, -1, 5, 6, 2**31 - 1):  # no top-k
        assert one_row(quarters, 1.0, top_k).tolist() == [0.25, 0.25, 0.0, 0.25, 0.25]
    for top_p in (float("nan"), 1.5, float("inf")):  # read as 1
        assert one_row(quarters, top_p, 0).tolist() == [0.25, 0.25, 0.0, 0.25, 0.25]
    for top_p in (0.0, -1.0, 1e-9, float("-inf")):  # the first token alone
        assert one_row(quarters, top_p, 0).tolist() == [1.0, 0.0, 0.0, 0.0, 0.0]
    # NaN, inf, negative and zero entries are never kept; values above 1 are valid with mass 2^40
    special = [np.nan, 0.5, np.inf, -2.0, 0.5, 0.0, 3.0]
    assert one_row(special, 1.0, 0).tolist() == [0.0, 0.25, 0.0, 0.0, 0.25, 0.0, 0.5]
    assert one_row(special, 1.0, 1).tolist() == [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]


def test_rows_without_a_valid_entry_and_padding_rows_are_zeros():
    probs = np.array(
        [
            [np.nan, -1, 0, np.inf, -0.0],
            [0.2, 0.3, 0.5, 0, 0],
            [0.2, 0.3, 0.5, 0, 0],
            [0.2, 0.3, 0.5, 0, 0],
            [0, 0, 0, 0, 0],
        ],
        np.float32,
    )
    batch_id = np.array([0, -1, 1, 1 << 30, 0], np.int32)  # rows 1 and 3 are padding
    got = run_cpu(probs, np.ones(2, np.float32), np.zeros(2, np.int32), batch_id)
    assert (got[[0, 1, 3, 4]] == 0).all() and not np.signbit(got).any()
    assert (
        got[2].tolist()
        == ref.top_k_top_p_probs(probs, np.ones(2, np.float32), np.zeros(2, np.int32), batch_id)[2].tolist()
    )
    assert got[2].sum() > 0.99


def test_massless_set_is_one_hot_on_the_first_token():
    """Every valid entry below 2^-40 (mass 0): S is the first token in probability order, as sample_tokens
    returns it, and it gets probability 1."""
    row = np.array([2.0**-45, 2.0**-41, 1e-40, 2.0**-41, 0.0], np.float32)
    assert prob_mass(row).sum() == 0
    for top_p, top_k in ((1.0, 0), (0.5, 2), (1e-6, 0)):
        assert one_row(row, top_p, top_k).tolist() == [0.0, 1.0, 0.0, 0.0, 0.0]


def test_each_kept_value_is_its_mass_over_the_sets_mass():
    """float(double(m) / double(M)) with M summed exactly; the row sums to 1 up to float rounding."""
    rng = np.random.default_rng(12)
    probs = np.stack([softmax(rng.normal(0, 3, 2000)) for _ in range(8)])
    top_p = np.array([0.9, 1.0, 0.5, 0.99], np.float32)
    top_k = np.array([0, 40, 0, 700], np.int32)
    batch_id = np.arange(8, dtype=np.int32) % 4
    got = run_cpu(probs, top_p, top_k, batch_id)
    for t in range(8):
        b = batch_id[t]
        kept = sample_set(probs[t], float(top_p[b]), int(top_k[b]))
        masses = prob_mass(probs[t, kept])
        total = int(sum(int(m) for m in masses))
        want = np.zeros(2000, np.float32)
        want[kept] = [np.float32(float(m) / float(total)) for m in masses]
        assert_bits(got[t : t + 1], want[None], f"row {t}")
        assert abs(float(got[t].astype(np.float64).sum()) - 1.0) < 1e-5


@pytest.mark.parametrize("vocab", [50, 3000])
def test_support_is_what_sample_tokens_draws_and_greedy_is_its_token(vocab):
    rng = np.random.default_rng(vocab)
    requests = 16
    probs = make_probs(rng, vocab, requests, kinds=tuple(k for k in KINDS if k != "invalid"))
    top_p, top_k, _, _ = request_params(rng, requests, vocab)
    batch_id = np.arange(requests, dtype=np.int32)
    target = run_cpu(probs, top_p, top_k, batch_id)
    draws = 200
    tokens = np.zeros(draws, np.int64)
    for t in range(requests):
        one = np.repeat(probs[t : t + 1], draws, axis=0)
        cu = np.array([0, draws], np.int32)
        arrays.sample_tokens(
            one,
            top_p[t : t + 1],
            top_k[t : t + 1],
            np.array([t + 1], np.int64),
            np.zeros(1, np.int64),
            np.zeros(draws, np.int32),
            cu,
            tokens=tokens,
        )
        assert (target[t, tokens] > 0).all(), f"row {t} drew outside the kept set"
        greedy = np.ones(1, np.int32)
        arrays.sample_tokens(
            one,
            top_p[t : t + 1],
            greedy,
            np.array([7], np.int64),
            np.zeros(1, np.int64),
            np.zeros(draws, np.int32),
            cu,
            tokens=tokens,
        )
        one_hot = run_cpu(probs[t : t + 1], top_p[t : t + 1], greedy, np.zeros(1, np.int32))[0]
        assert np.flatnonzero(one_hot).tolist() == [tokens[0]] and one_hot[tokens[0]] == 1.0


def test_batch_invariance():
    """A row's output does not depend on the other rows, its slot or the batch."""
    rng = np.random.default_rng(17)
    vocab = 2000
    mine = make_probs(rng, vocab, 3, kinds=("peaked", "uniform", "ties"))
    alone = run_cpu(mine, np.array([0.9], np.float32), np.array([50], np.int32), np.zeros(3, np.int32))
    for slot, batch in ((0, 4), (2, 5), (6, 7)):
        probs, top_p, top_k, batch_id = probs_case(rng, vocab, [2] * batch, padding_rows=2)
        rows = np.flatnonzero(batch_id == slot)[:2]
        probs[rows] = mine[:2]
        top_p[slot], top_k[slot] = 0.9, 50
        got = run_cpu(probs, top_p, top_k, batch_id)
        assert_bits(got[rows], alone[:2])


# ---- the Paddle op --------------------------------------------------------------------------


def paddle_call(probs, top_p, top_k, batch_id, dtype="float32"):
    tensor = paddle.to_tensor(probs)
    if dtype != "float32":
        tensor = tensor.astype(dtype)
    out = ops.top_k_top_p_probs(tensor, *(paddle.to_tensor(x) for x in (top_p, top_k, batch_id)))
    return out, tensor.numpy()


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("vocab", [1, 7, 300, 32000])
def test_op_matches_reference(dtype, vocab):
    probs, top_p, top_k, batch_id = probs_case(np.random.default_rng(vocab + 7), vocab, (1, 2, 3, 1, 2, 1))
    out, host = paddle_call(probs, top_p, top_k, batch_id, dtype)
    assert out.dtype == paddle.float32 and out.shape == list(probs.shape)
    assert_bits(out.numpy(), ref.top_k_top_p_probs(host, top_p, top_k, batch_id))


def test_op_per_request_column_vectors_and_empty_rows():
    probs, top_p, top_k, batch_id = probs_case(np.random.default_rng(2), 300, (1, 2, 3))
    out = ops.top_k_top_p_probs(
        paddle.to_tensor(probs),
        paddle.to_tensor(top_p[:, None]),
        paddle.to_tensor(top_k[:, None]),
        paddle.to_tensor(batch_id),
    )
    assert_bits(out.numpy(), ref.top_k_top_p_probs(probs, top_p, top_k, batch_id))
    empty = ops.top_k_top_p_probs(
        paddle.to_tensor(np.zeros((0, 10), np.float32)),
        paddle.to_tensor(top_p),
        paddle.to_tensor(top_k),
        paddle.to_tensor(np.zeros(0, np.int32)),
    )
    assert empty.shape == [0, 10]


def test_static_graph_build_and_run():
    case = dict(zip(NAMES, probs_case(np.random.default_rng(4), 300, (2, 1, 3))))
    got = run_static(case, lambda feeds: [ops.top_k_top_p_probs(*(feeds[n] for n in NAMES))], any_rows=True)
    assert_bits(got[0], ref.top_k_top_p_probs(*(case[n] for n in NAMES)))


@pytest.mark.parametrize(
    "name, value",
    [
        ("probs", np.ones((10, 300), np.float64)),
        ("top_k", np.ones(6, np.int64)),
        ("top_k", np.ones(5, np.int32)),
        ("top_p", np.ones((6, 2), np.float32)),
        ("batch_id_per_token_output", np.zeros(9, np.int32)),
    ],
)
def test_bad_inputs_name_the_argument(name, value):
    case = dict(zip(NAMES, probs_case(np.random.default_rng(1), 300, (1, 2, 3, 1, 2, 1), padding_rows=0)))
    case["probs"], case["batch_id_per_token_output"] = case["probs"][:10], case["batch_id_per_token_output"][:10]
    case[name] = value
    with pytest.raises(arrays.FastspecArgumentError, match=f"top_k_top_p_probs: .*'{name}'"):
        arrays.top_k_top_p_probs(**case)
    tensors = {n: paddle.to_tensor(v) for n, v in case.items()}
    with pytest.raises(ops.FastspecArgumentError, match=f"top_k_top_p_probs: .*'{name}'"):
        ops.top_k_top_p_probs(**tensors)
    with pytest.raises(ops.FastspecArgumentError, match=f"'{name}'"):  # the C++ guard alone
        raw_op("top_k_top_p_probs", tensors, {})


def test_a_wrong_output_buffer_is_named():
    probs, top_p, top_k, batch_id = probs_case(np.random.default_rng(6), 30, (1, 2))
    for bad in (np.zeros(probs.shape, np.float64), np.zeros((probs.shape[0], 31), np.float32)):
        with pytest.raises(arrays.FastspecArgumentError, match="'target_probs'"):
            arrays.top_k_top_p_probs(probs, top_p, top_k, batch_id, target_probs=bad)

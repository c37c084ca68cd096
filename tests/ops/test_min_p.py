"""min_p in top_p_candidates, sample_tokens and top_k_top_p_probs (docs/ops/sampling.md): the CPU kernels
(every thread count; CI runs tests/ops again with FASTSPEC_SIMD=off) and the Paddle ops (eager and a
static graph) against the reference bit for bit, with random and edge min_p per request; the rule by
hand; min_p 0, below its quantum or left out changes no bit; min_p before top-k before top-p; the
sampling frequencies; bad min_p tensors named."""

from __future__ import annotations

import numpy as np
import paddle
import pytest

from fastspec import arrays, ops
from fastspec import reference as ref
from fastspec.reference.mass import minp_quantum, minp_threshold, prob_mass
from tests.helpers.sampling_cases import make_batch, make_probs, min_p_values, request_params, softmax, to_bf16_bits
from tests.helpers.static_graph import run_static
from tests.ops.test_sampling_kernels import chi_square_critical

NAMES = ("probs", "top_p", "top_k", "seed", "step_idx", "batch_id_per_token_output", "cu_seqlens_q_output", "min_p")
K = 64  # candidates per row


def random_case(rng: np.random.Generator, vocab: int, rows_per_request=(1, 3, 2, 1, 4, 1, 2, 5), odd=True) -> dict:
    cu, batch_id = make_batch(rng, list(rows_per_request), padding_rows=3)
    probs = make_probs(rng, vocab, len(batch_id))
    top_p, top_k, seed, step = request_params(rng, len(rows_per_request), vocab)
    min_p = min_p_values(rng, len(rows_per_request), odd)
    return dict(zip(NAMES, (probs, top_p, top_k, seed, step, batch_id, cu, min_p)))


def run_all(api, c: dict, **options) -> tuple:
    """The three ops' outputs through ``api`` (fastspec.reference or fastspec.arrays)."""
    probs = np.ascontiguousarray(c["probs"])
    per_row = (c["batch_id_per_token_output"], c["min_p"])
    k = min(K, probs.shape[1])
    candidates = api.top_p_candidates(probs, c["top_p"], *per_row, max_candidate_len=k, **options)
    tokens = api.sample_tokens(probs, *(c[n] for n in NAMES[1:]), **options)
    target = api.top_k_top_p_probs(probs, c["top_p"], c["top_k"], *per_row, **options)
    return (*candidates, tokens, target)


def assert_same(got: tuple, want: tuple, context: str = "") -> None:
    names = ("candidate_ids", "candidate_scores", "candidate_lens", "tokens", "target_probs")
    for name, g, w in zip(names, got, want):
        g, w = np.asarray(g), np.ascontiguousarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, name
        differ = np.argwhere(g.view(np.uint8) != w.view(np.uint8))
        assert len(differ) == 0, f"{name} differs at bytes {differ[:4].tolist()} {context}"


# ---- the CPU kernels against the reference ---------------------------------------------------


@pytest.mark.parametrize("num_threads", [1, 0])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("vocab", [1, 7, 100, 32000])
def test_cpu_matches_the_reference(vocab, dtype, num_threads):
    rng = np.random.default_rng(vocab * 7 + len(dtype))
    for trial in range(3 if vocab < 32000 else 1):
        c = random_case(rng, vocab, (1, 3, 2, 1, 4, 1, 2, 5) if vocab < 32000 else (2, 1, 3, 1, 2))
        if dtype == "float16":
            c["probs"] = c["probs"].astype(np.float16)
        elif dtype == "bfloat16":
            c["probs"] = to_bf16_bits(c["probs"])
        assert_same(run_all(arrays, c, num_threads=num_threads), run_all(ref, c), f"trial {trial}")


def test_a_large_vocabulary_matches_the_reference():
    """Rows of 151936 entries, min_p from no cut to the largest alone."""
    rng = np.random.default_rng(151936)
    c = random_case(rng, 151936, (2, 1, 2), odd=False)
    c["min_p"] = np.array([0.02, 1e-4, 0.5], np.float32)
    assert_same(run_all(arrays, c), run_all(ref, c))


@pytest.mark.parametrize("top_p", [1.0, 0.9])
def test_near_flat_rows_match_the_reference(top_p):
    """Near-uniform rows (the CPU's near-flat path when min_p cuts nothing), cut anywhere from none to most."""
    rng = np.random.default_rng(3)
    min_ps = np.array([1e-6, 0.995, 0.998, 0.9995, 0.999999, 0.0], np.float32)
    cu, batch_id = make_batch(rng, [1] * len(min_ps), padding_rows=0)
    probs = make_probs(rng, 32000, len(min_ps), kinds=("uniform",))
    n = len(min_ps)
    flat = (np.full(n, top_p, np.float32), np.zeros(n, np.int32), np.arange(n, dtype=np.int64), np.zeros(n, np.int64))
    values = (probs, *flat, batch_id, cu)
    c = dict(zip(NAMES, (*values, min_ps)))
    got = run_all(arrays, c)
    assert_same(got, run_all(ref, c))
    kept = (got[-1] > 0).sum(axis=1)
    assert kept[0] == kept[5] and 0 < kept[2] < kept[0], kept  # the tiny min_p cuts nothing, 0.998 some


# ---- the rule ----------------------------------------------------------------------------------


def one_row(api, probs, top_p=1.0, top_k=0, min_p=0.0, seed=1):
    """(candidate ids, tokens, target_probs) of a one-row request through ``api``."""
    row = np.asarray([probs], np.float32)
    c = dict(
        zip(
            NAMES,
            (
                row,
                np.array([top_p], np.float32),
                np.array([top_k], np.int32),
                np.array([seed], np.int64),
                np.zeros(1, np.int64),
                np.zeros(1, np.int32),
                np.array([0, 1], np.int32),
                np.array([min_p], np.float32),
            ),
        )
    )
    ids, _, lens, tokens, target = run_all(api, c)
    return ids[0, : lens[0]].tolist(), int(tokens[0]), target[0]


@pytest.mark.parametrize("api", [ref, arrays], ids=["reference", "cpu"])
def test_min_p_keeps_what_is_at_least_min_p_times_the_largest(api):
    probs = [0.05, 0.5, 0.25, 0.2]  # min_p 0.45: keep p >= 0.225, so ids 1 and 2
    ids, _, target = one_row(api, probs, min_p=0.45)
    assert ids == [1, 2]
    np.testing.assert_allclose(target, [0.0, 2 / 3, 1 / 3, 0.0], rtol=1e-6)  # the bits: against the reference
    draws = {one_row(api, probs, min_p=0.45, seed=s)[1] for s in range(60)}
    assert draws == {1, 2}
    assert one_row(api, probs, min_p=1.0)[0] == [1]  # the largest alone
    assert one_row(api, [0.25, 0.5, 0.25], min_p=0.5)[0] == [1, 0, 2]  # exactly at the cut: kept
    assert one_row(api, probs, min_p=0.0)[0] == [1, 2, 3, 0]


@pytest.mark.parametrize("api", [ref, arrays], ids=["reference", "cpu"])
def test_min_p_comes_before_top_k_and_top_p(api):
    probs = [0.4, 0.3, 0.2, 0.1]
    # min_p 0.6 keeps {0.4, 0.3}, mass 0.7; top_p 0.5 of it is 0.35: token 0 alone (of the whole row: two)
    np.testing.assert_array_equal(one_row(api, probs, top_p=0.5, min_p=0.6)[2], [1.0, 0, 0, 0])
    np.testing.assert_allclose(one_row(api, probs, top_p=0.5)[2], [4 / 7, 3 / 7, 0, 0], rtol=1e-6)
    # top_p_candidates: the threshold comes from the kept mass too
    assert one_row(api, probs, top_p=0.5, min_p=0.6)[0] == [0]
    assert one_row(api, probs, top_p=0.5)[0] == [0, 1]
    # min_p 0.45 keeps three; top_k 2 the first two of them
    np.testing.assert_allclose(one_row(api, probs, top_k=2, min_p=0.45)[2], [4 / 7, 3 / 7, 0, 0], rtol=1e-6)
    assert one_row(api, probs, top_k=5, min_p=0.45)[0] == [0, 1, 2]


def test_the_threshold_is_exact_integer_arithmetic():
    assert minp_quantum(0.0) == minp_quantum(float("nan")) == minp_quantum(-1.0) == minp_quantum(2.0**-25) == 0
    assert minp_quantum(1.5 * 2.0**-25) == 1  # rounds up to one quantum
    assert minp_quantum(1.0) == minp_quantum(7.0) == 1 << 24
    assert minp_quantum(2.0**-24) == 1 and minp_quantum(0.5) == 1 << 23
    big = 1 << 40
    assert minp_threshold(big, 1.0) == big and minp_threshold(big, 0.5) == big // 2
    assert minp_threshold(3, 2.0**-24) == 1  # ceil of 3 / 2^24
    assert minp_threshold(0, 0.9) == 0  # a massless largest entry: nothing is cut


def test_rows_whose_largest_entry_has_no_mass_keep_every_valid_entry():
    row = np.full(6, 2.0**-45, np.float32)
    row[2] = 2.0**-41  # still below 2^-40: mass 0
    row[4] = np.nan
    for api in (ref, arrays):
        ids, token, target = one_row(api, row, min_p=0.9)
        assert ids == [2, 0, 1, 3, 5][: len(ids)] and token == 2  # the M == 0 rules: the first token
        assert target.tolist() == [0, 0, 1.0, 0, 0, 0]
        assert one_row(api, row, min_p=0.9)[0] == one_row(api, row)[0]


def test_min_p_zero_tiny_odd_or_left_out_changes_no_bit():
    rng = np.random.default_rng(11)
    for vocab in (7, 300, 32000):
        c = random_case(rng, vocab, odd=False)
        b = len(c["top_p"])
        base = dict(c, min_p=None)
        want = run_all(arrays, base)
        assert_same(want, run_all(ref, base))
        for off in (0.0, 1e-9, 2.0**-26, -1.0, float("nan"), float("-inf")):
            assert_same(run_all(arrays, dict(c, min_p=np.full(b, off, np.float32))), want, f"min_p {off}")


@pytest.mark.parametrize("top_p, top_k, min_p", [(1.0, 0, 0.1), (0.9, 0, 0.3), (1.0, 6, 0.05), (0.95, 0, 0.4)])
def test_sampling_frequencies_match_the_kept_distribution(top_p, top_k, min_p):
    """Chi-square over many seeds (fixed seeds: deterministic, cannot flake)."""
    rng = np.random.default_rng(99)
    vocab, draws = 24, 40000
    row = softmax(rng.normal(0.0, 1.0, vocab))
    target = ref.sampling_distribution(row, top_p, top_k, min_p)
    kept = prob_mass(row) >= minp_threshold(int(prob_mass(row).max()), min_p)
    assert (target[~kept] == 0).all() and (target > 0).sum() > 1
    cu, batch_id = make_batch(rng, [1] * draws)
    full = lambda v, dtype: np.full(draws, v, dtype)  # noqa: E731
    tokens = arrays.sample_tokens(
        np.repeat(row[None], draws, axis=0),
        full(top_p, np.float32),
        full(top_k, np.int32),
        np.arange(draws, dtype=np.int64) * 7919 + 1,
        full(0, np.int64),
        batch_id,
        cu,
        full(min_p, np.float32),
    )
    counts = np.bincount(tokens, minlength=vocab)
    assert counts[target == 0].sum() == 0, "drew a token min_p, top-k or top-p drops"
    support = target > 0
    expected = target[support] * draws
    stat = float(((counts[support] - expected) ** 2 / expected).sum())
    assert stat < chi_square_critical(int(support.sum()) - 1), stat


# ---- the Paddle ops ----------------------------------------------------------------------------


def paddle_all(c: dict) -> tuple:
    t = {n: None if v is None else paddle.to_tensor(v) for n, v in c.items()}
    per_row = (t["batch_id_per_token_output"], t["min_p"])
    k = min(K, c["probs"].shape[1])
    candidates = ops.top_p_candidates(t["probs"], t["top_p"], *per_row, max_candidate_len=k)
    tokens = ops.sample_tokens(*(t[n] for n in NAMES))
    target = ops.top_k_top_p_probs(t["probs"], t["top_p"], t["top_k"], *per_row)
    return tuple(x.numpy() for x in (*candidates, tokens, target))


@pytest.mark.parametrize("vocab", [7, 300])
def test_paddle_ops_match_the_reference(vocab):
    rng = np.random.default_rng(vocab + 5)
    c = random_case(rng, vocab)
    assert_same(paddle_all(c), run_all(ref, c))
    assert_same(paddle_all(dict(c, min_p=None)), run_all(ref, dict(c, min_p=None)))


def test_a_static_graph_takes_min_p():
    c = random_case(np.random.default_rng(8), 100)

    def build(feeds):
        per_row = (feeds["batch_id_per_token_output"], feeds["min_p"])
        return [
            *ops.top_p_candidates(feeds["probs"], feeds["top_p"], *per_row, max_candidate_len=K),
            ops.sample_tokens(*(feeds[n] for n in NAMES)),
            ops.top_k_top_p_probs(feeds["probs"], feeds["top_p"], feeds["top_k"], *per_row),
        ]

    assert_same(tuple(run_static(c, build, any_rows=True)), run_all(ref, c))


@pytest.mark.parametrize(
    "bad, words",
    [(np.zeros(8, np.float64), "float32"), (np.zeros(9, np.float32), "9"), (np.zeros((8, 2), np.float32), "")],
)
def test_a_bad_min_p_tensor_is_named(bad, words):
    c = random_case(np.random.default_rng(2), 7)
    c["min_p"] = bad
    with pytest.raises(arrays.FastspecArgumentError, match=f"sample_tokens: .*'min_p'.*{words}"):
        arrays.sample_tokens(*(c[n] for n in NAMES))
    with pytest.raises(ops.FastspecArgumentError, match="top_k_top_p_probs: .*'min_p'"):
        ops.top_k_top_p_probs(
            *(paddle.to_tensor(c[n]) for n in ("probs", "top_p", "top_k")),
            paddle.to_tensor(c["batch_id_per_token_output"]),
            paddle.to_tensor(bad),
        )

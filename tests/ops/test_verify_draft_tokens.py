"""verify_draft_tokens: the Paddle op (and the bindings' CPU path) against the numpy reference,
one test per rule of docs/ops/verify_draft_tokens.md, the TOPP draw's statistics, and bad inputs."""

from __future__ import annotations

import numpy as np
import paddle
import pytest

import fastspec.arrays
import fastspec.ops as ops
from fastspec import reference as ref
from tests.helpers.op_names import PER_REQUEST
from tests.helpers.static_graph import run_static
from tests.helpers.verify_update_cases import STRATEGIES, VERIFY_NAMES, random_verify_case

END = 2  # end_tokens = [END, 3] in the hand-written cases


def run_op(arrays: dict, attrs: dict) -> tuple[np.ndarray, np.ndarray]:
    tensors = {name: None if value is None else paddle.to_tensor(value) for name, value in arrays.items()}
    tokens, num = ops.verify_draft_tokens(*(tensors[name] for name in VERIFY_NAMES), **attrs)
    assert tokens is tensors["accept_tokens"] and num is tensors["accept_num"]
    return tokens.numpy(), num.numpy()


def run_bindings(arrays: dict, attrs: dict) -> tuple[np.ndarray, np.ndarray]:
    copies = {name: None if value is None else np.ascontiguousarray(value).copy() for name, value in arrays.items()}
    fastspec.arrays.verify_draft_tokens(*(copies[name] for name in VERIFY_NAMES), **attrs)
    return copies["accept_tokens"], copies["accept_num"]


def run_reference(arrays: dict, attrs: dict) -> tuple[np.ndarray, np.ndarray]:
    return ref.verify_draft_tokens(*(arrays[name] for name in VERIFY_NAMES), **attrs)


def assert_same(actual, expected, context=""):
    np.testing.assert_array_equal(actual[0], expected[0], err_msg=f"accept_tokens {context}")
    np.testing.assert_array_equal(actual[1], expected[1], err_msg=f"accept_num {context}")


def case(
    strategy: str = "greedy",
    drafts=(),
    targets=None,
    candidates=None,
    *,
    k: int = 4,
    step: int = 10,
    max_dec: int = 100,
    prefill: int = 0,
    seed: int = 7,
) -> tuple[dict, dict]:
    """One slot: decode with `drafts` (or prefill of `prefill` tokens), its rows' targets or
    candidates (`candidates`: list of (ids, scores) per row, len = len(ids))."""
    n_rows = 1 if prefill else 1 + len(drafts)
    draft_tokens = np.full((1, k + 1), -1, np.int64)
    draft_tokens[0, 0] = 40
    draft_tokens[0, 1 : 1 + len(drafts)] = drafts
    arrays = {
        "accept_tokens": np.full((1, k + 1), 99, np.int64),  # stale values must be cleared
        "accept_num": np.array([5], np.int32),
        "draft_tokens": draft_tokens,
        "target_tokens": None,
        "candidate_ids": None,
        "candidate_scores": None,
        "candidate_lens": None,
        "seed": np.array([seed], np.int64),
        "step_idx": np.array([step], np.int64),
        "stop_flags": np.array([False]),
        "is_block_step": np.array([False]),
        "seq_lens_encoder": np.array([prefill], np.int32),
        "seq_lens_this_time": np.array([prefill or 1 + len(drafts)], np.int32),
        "cu_seqlens_q_output": np.array([0, n_rows], np.int32),
        "reasoning_status": None,
        "max_dec_len": np.array([max_dec], np.int64),
        "end_tokens": np.array([END, 3], np.int64),
    }
    if strategy == "topp":
        width = max(len(ids) for ids, _ in candidates)
        ids_arr = np.full((n_rows, width), -1, np.int64)
        scores_arr = np.zeros((n_rows, width), np.float32)
        lens = np.zeros(n_rows, np.int32)
        for t, (ids, scores) in enumerate(candidates):
            ids_arr[t, : len(ids)] = ids
            scores_arr[t, : len(ids)] = scores
            lens[t] = len(ids)
        arrays.update(candidate_ids=ids_arr, candidate_scores=scores_arr, candidate_lens=lens)
    else:
        arrays["target_tokens"] = np.array(targets, np.int64)
    return arrays, {"strategy": strategy}


def check(arrays: dict, attrs: dict, expected_tokens: list[int]) -> None:
    """The op (and the bindings and the reference) emit exactly `expected_tokens` for slot 0."""
    results = [run_op(arrays, attrs), run_bindings(arrays, attrs), run_reference(arrays, attrs)]
    for tokens, num in results:
        cols = tokens.shape[1]
        assert tokens[0].tolist() == expected_tokens + [-1] * (cols - len(expected_tokens))
        assert int(num.reshape(-1)[0]) == len(expected_tokens)


# --- random batches -------------------------------------------------------


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("chunk", range(2))
def test_random_batches_match_the_reference(strategy, chunk):
    rng = np.random.default_rng(100 * STRATEGIES.index(strategy) + chunk)
    for n in range(600):
        arrays, attrs = random_verify_case(rng, strategy=strategy)
        expected = run_reference(arrays, attrs)
        assert_same(run_op(arrays, attrs), expected, f"case {n} {attrs}")
        if n % 4 == 0:
            assert_same(run_bindings(arrays, attrs), expected, f"bindings case {n} {attrs}")


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_large_batch_uses_threads_and_matches_the_reference(strategy):
    arrays, attrs = random_verify_case(np.random.default_rng(5), strategy=strategy, batch=5000, k=5)
    attrs.update(accept_all=False, reject_all=False)
    assert_same(run_op(arrays, attrs), run_reference(arrays, attrs))


def test_never_emits_minus_one_or_a_token_outside_the_inputs():
    rng = np.random.default_rng(9)
    for _ in range(300):
        arrays, attrs = random_verify_case(rng)
        tokens, num = run_op(arrays, attrs)
        for b, count in enumerate(num.reshape(-1)):
            assert (tokens[b, :count] >= 0).all() and (tokens[b, count:] == -1).all()


# --- one test per rule of docs/ops/verify_draft_tokens.md ------------------------------------------


def test_stopped_slot_emits_nothing():
    arrays, attrs = case("greedy", [5], [5, 6])
    arrays["stop_flags"][0] = True
    check(arrays, attrs, [])


def test_blocked_slot_emits_nothing():
    arrays, attrs = case("greedy", [5], [5, 6])
    arrays["is_block_step"][0] = True
    check(arrays, attrs, [])


def test_decode_slot_without_this_time_emits_nothing():
    arrays, attrs = case("greedy", [5], [5, 6])
    arrays["seq_lens_this_time"][0] = 0
    check(arrays, attrs, [])


def test_slot_with_fewer_rows_than_it_needs_emits_nothing():
    arrays, attrs = case("greedy", [5, 6], [5, 6, 7])
    arrays["cu_seqlens_q_output"][1] = 2  # needs 3 rows
    check(arrays, attrs, [])


def test_slot_with_rows_outside_the_output_emits_nothing():
    arrays, attrs = case("greedy", [5], [5, 6])
    arrays["cu_seqlens_q_output"][:] = [1, 3]  # row 2 is past T = 2
    check(arrays, attrs, [])
    arrays["cu_seqlens_q_output"][:] = [-1, 2]
    check(arrays, attrs, [])


def test_stale_accept_tokens_are_cleared():
    arrays, attrs = case("greedy", [], [8])
    check(arrays, attrs, [8])  # case() fills accept_tokens with 99 and accept_num with 5


def test_greedy_accepts_the_matching_prefix_then_emits_the_target_at_the_first_mismatch():
    arrays, attrs = case("greedy", [5, 6, 7, 8], [5, 6, 9, 8, 4])
    check(arrays, attrs, [5, 6, 9])


def test_greedy_bonus_after_every_draft_is_accepted():
    arrays, attrs = case("greedy", [5, 6], [5, 6, 11])
    check(arrays, attrs, [5, 6, 11])


def test_target_match_uses_the_target_equality_rule():
    arrays, attrs = case("target_match", [5, 6, 7], [5, 1, 7, 4])
    check(arrays, attrs, [5, 1])


def test_topp_accepts_a_draft_among_the_first_len_candidates():
    rows = [([9, 5], [0.6, 0.4]), ([6], [1.0]), ([4], [1.0])]
    arrays, attrs = case("topp", [5, 6], candidates=rows)
    check(arrays, attrs, [5, 6, 4])


def test_topp_candidates_past_candidate_lens_do_not_accept():
    rows = [([9, 5], [0.6, 0.4]), ([4], [1.0])]
    arrays, attrs = case("topp", [5], candidates=rows)
    arrays["candidate_lens"][0] = 1  # 5 sits at index 1, past len
    tokens, _ = run_op(arrays, attrs)
    assert tokens[0, 0] == 9  # rejected: the correction is drawn from [9] alone
    check(arrays, attrs, [9])


def test_topp_candidate_lens_is_clamped_to_the_candidate_columns():
    rows = [([9, 5], [0.6, 0.4]), ([4], [1.0])]
    arrays, attrs = case("topp", [5], candidates=rows)
    arrays["candidate_lens"][:] = [50, 50]
    check(arrays, attrs, [5, 4])


def test_topp_correction_is_a_seeded_draw_from_the_candidates():
    rows = [([9, 5, 11], [0.5, 0.3, 0.2])]
    for seed in range(20):
        arrays, attrs = case("topp", [], candidates=rows, seed=seed)
        expected = run_reference(arrays, attrs)
        token = int(expected[0][0, 0])
        assert token in (9, 5, 11)
        check(arrays, attrs, [token])


def test_topp_correction_with_zero_total_mass_is_the_first_candidate():
    rows = [([9, 5], [0.0, float("nan")])]
    for seed in range(5):
        arrays, attrs = case("topp", [], candidates=rows, seed=seed)
        check(arrays, attrs, [9])


def test_topp_invalid_scores_are_never_drawn():
    rows = [([9, 5, 11], [float("nan"), 0.5, -1.0])]
    for seed in range(20):
        arrays, attrs = case("topp", [], candidates=rows, seed=seed)
        check(arrays, attrs, [5])


def test_topp_row_without_candidates_emits_the_first_end_token():
    rows = [([9], [1.0])]
    arrays, attrs = case("topp", [], candidates=rows)
    arrays["candidate_lens"][0] = 0
    check(arrays, attrs, [END])


def test_topp_drawn_negative_candidate_id_emits_the_first_end_token():
    rows = [([-1], [1.0])]
    arrays, attrs = case("topp", [], candidates=rows)
    check(arrays, attrs, [END])


def test_negative_target_emits_the_first_end_token():
    arrays, attrs = case("greedy", [5], [5, -1])
    check(arrays, attrs, [5, END])


def test_negative_draft_is_never_accepted():
    arrays, attrs = case("greedy", [-1], [-1, 6])
    check(arrays, attrs, [END])  # the -1 target is then the correction: end token
    arrays, attrs = case("greedy", [-1], [4, 6])
    attrs["accept_all"] = True
    check(arrays, attrs, [4])


def test_accept_all_accepts_every_draft():
    arrays, attrs = case("greedy", [5, 6, 7], [1, 1, 1, 8])
    attrs["accept_all"] = True
    check(arrays, attrs, [5, 6, 7, 8])
    rows = [([1], [1.0])] * 3 + [([8], [1.0])]
    arrays, attrs = case("topp", [5, 6, 7], candidates=rows)
    attrs["accept_all"] = True
    check(arrays, attrs, [5, 6, 7, 8])


def test_reject_all_rejects_every_draft_and_wins_over_accept_all():
    arrays, attrs = case("greedy", [5, 6], [5, 6, 7])
    attrs.update(accept_all=True, reject_all=True)
    check(arrays, attrs, [5])  # the correction of row 0 (which equals the draft)


def test_reasoning_status_one_rejects_every_draft():
    for status, expected in ((1, [5]), (0, [5, 6, 7]), (2, [5, 6, 7])):
        arrays, attrs = case("greedy", [5, 6], [5, 6, 7])
        arrays["reasoning_status"] = np.array([status], np.int32)
        check(arrays, attrs, expected)


def test_prefill_emits_one_token_from_its_first_row():
    arrays, attrs = case("greedy", [], [12, 13], prefill=30)
    arrays["cu_seqlens_q_output"][1] = 2  # more rows than needed is fine
    check(arrays, attrs, [12])
    arrays, attrs = case("topp", [], candidates=[([12], [1.0])], prefill=30)
    check(arrays, attrs, [12])


def test_end_token_among_the_drafts_ends_the_request():
    arrays, attrs = case("greedy", [5, 3, 7], [5, 3, 7, 8])
    check(arrays, attrs, [5, 3])


def test_end_token_as_correction_ends_the_request():
    arrays, attrs = case("greedy", [5, 6], [5, END, 7])
    check(arrays, attrs, [5, END])


def test_max_dec_len_reached_on_a_draft_turns_it_into_the_end_token():
    arrays, attrs = case("greedy", [5, 6, 7], [5, 6, 7, 8], step=10, max_dec=12)
    check(arrays, attrs, [5, END])


def test_max_dec_len_reached_on_the_bonus_turns_it_into_the_end_token():
    arrays, attrs = case("greedy", [5, 6], [5, 6, 8], step=10, max_dec=13)
    check(arrays, attrs, [5, 6, END])


def test_max_dec_len_keeps_an_end_token_that_is_not_the_first():
    arrays, attrs = case("greedy", [5, 3], [5, 3, 8], step=10, max_dec=12)
    check(arrays, attrs, [5, 3])


def test_max_dec_len_already_reached_emits_one_end_token():
    arrays, attrs = case("greedy", [5, 6], [5, 6, 8], step=20, max_dec=12)
    check(arrays, attrs, [END])


def test_padding_rows_between_requests_are_skipped():
    # Two slots; a padding row sits between them.
    a0, attrs = case("greedy", [5], [5, 6])
    arrays = {name: None if v is None else np.concatenate([v, v]) for name, v in a0.items()}
    arrays["accept_tokens"] = np.full((2, 5), 99, np.int64)
    arrays["draft_tokens"] = np.repeat(a0["draft_tokens"], 2, axis=0)
    arrays["cu_seqlens_q_output"] = np.array([0, 3, 5], np.int32)
    arrays["target_tokens"] = np.array([5, 6, 77, 5, 9], np.int64)
    arrays["end_tokens"] = a0["end_tokens"]
    tokens, num = run_op(arrays, attrs)
    assert tokens[:, :2].tolist() == [[5, 6], [5, 9]] and num.tolist() == [2, 2]
    assert_same((tokens, num), run_reference(arrays, attrs))


def test_this_time_above_k_plus_one_judges_at_most_k_drafts():
    arrays, attrs = case("greedy", [5, 6], [5, 6, 7, 8, 9], k=2)
    arrays["seq_lens_this_time"][0] = 5
    arrays["cu_seqlens_q_output"][1] = 5
    check(arrays, attrs, [5, 6, 7])


def test_strategy_is_case_insensitive_and_an_enum_works():
    for strategy in ("GREEDY", "Greedy", ops.VerifyStrategy.GREEDY):
        arrays, _ = case("greedy", [5], [5, 6])
        tokens, num = run_op(arrays, {"strategy": strategy})
        assert tokens[0, :2].tolist() == [5, 6] and num.tolist() == [2]


def test_per_request_tensors_may_be_column_vectors():
    arrays, attrs = case("greedy", [5, 6], [5, 7, 8])
    for name in (n for n in PER_REQUEST if arrays[n] is not None):
        arrays[name] = arrays[name].reshape(-1, 1)
    tokens, num = run_op(arrays, attrs)
    assert num.shape == (1, 1) and num.tolist() == [[2]] and tokens[0, :2].tolist() == [5, 7]


# --- TOPP statistics and batch invariance ----------------------------------


def test_topp_correction_frequencies_follow_the_candidate_scores():
    """One TOPP row per slot, 4000 slots with distinct seeds: a chi-square test at a fixed
    significance (p < 1e-4 fails) of the drawn candidates against the score masses."""
    n, ids, scores = 4000, [9, 5, 11, 20], np.array([0.4, 0.3, 0.2, 0.1], np.float32)
    arrays, attrs = case("topp", [], candidates=[(ids, scores)])
    arrays = {name: None if v is None else np.repeat(v, n, axis=0) for name, v in arrays.items()}
    arrays["end_tokens"] = np.array([END, 3], np.int64)
    arrays["cu_seqlens_q_output"] = np.arange(n + 1, dtype=np.int32)
    arrays["seed"] = np.arange(n, dtype=np.int64) * 7919 + 1
    tokens, num = run_op(arrays, attrs)
    assert (num == 1).all()
    counts = np.array([(tokens[:, 0] == i).sum() for i in ids])
    assert counts.sum() == n
    expected = n * scores.astype(np.float64) / scores.sum()
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 21.1, (counts, expected)  # chi-square, 3 degrees of freedom, p = 1e-4


def test_topp_same_seed_and_position_give_the_same_token_whatever_the_batch():
    rng = np.random.default_rng(3)
    rows = [([9, 5, 11, 20], [0.4, 0.3, 0.2, 0.1])]
    alone = {}
    for seed in range(40):
        arrays, attrs = case("topp", [], candidates=rows, seed=seed, step=seed % 5)
        alone[seed] = int(run_op(arrays, attrs)[0][0, 0])
    # The same requests inside shuffled batches with other slots around them.
    for _ in range(5):
        order = rng.permutation(40)
        arrays, attrs = case("topp", [], candidates=rows)
        batch = {name: None if v is None else np.repeat(v, 80, axis=0) for name, v in arrays.items()}
        batch["end_tokens"] = arrays["end_tokens"]
        batch["cu_seqlens_q_output"] = np.arange(81, dtype=np.int32)
        batch["seed"] = rng.integers(1000, 10**9, size=80)
        batch["step_idx"] = rng.integers(0, 100, size=80)
        slots = rng.choice(80, size=40, replace=False)
        batch["seed"][slots] = order
        batch["step_idx"][slots] = order % 5
        tokens, _ = run_op(batch, attrs)
        for slot, seed in zip(slots, order):
            assert int(tokens[slot, 0]) == alone[int(seed)]


def test_target_match_with_sampled_targets_is_lossless_for_one_hot_drafts():
    """Targets from sample_tokens, a one-hot (n-gram) draft: over 4000 seeds the first emitted
    token follows the target distribution (chi-square, p < 1e-4 fails), and the draft is
    accepted exactly when the target equals it."""
    probs_row = np.array([0.05, 0.35, 0.0, 0.25, 0.2, 0.15], np.float32)  # token 2 is the end token
    n, draft = 4000, 3
    probs = np.tile(probs_row, (2 * n, 1))
    top_p = np.ones(n, np.float32)
    top_k = np.zeros(n, np.int32)
    seed = np.arange(n, dtype=np.int64) * 104729 + 11
    step = np.full(n, 5, np.int64)
    cu = (2 * np.arange(n + 1)).astype(np.int32)
    batch_ids = np.repeat(np.arange(n, dtype=np.int32), 2)
    targets = ref.sample_tokens(probs, top_p, top_k, seed, step, batch_ids, cu)
    arrays, attrs = case("target_match", [draft], [0, 0], step=5)
    arrays = {name: None if v is None else np.repeat(v, n, axis=0) for name, v in arrays.items()}
    arrays.update(end_tokens=np.array([END], np.int64), cu_seqlens_q_output=cu, seed=seed, target_tokens=targets)
    tokens, num = run_op(arrays, attrs)
    first = tokens[:, 0]
    accepted = first == draft
    assert (num[accepted] == 2).all() and (num[~accepted] == 1).all()
    target = ref.sampling_distribution(probs_row, 1.0, 0)
    counts = np.array([(first == v).sum() for v in range(len(probs_row))])
    support = target > 0
    assert counts[~support].sum() == 0
    expected = n * target[support]
    chi2 = float(((counts[support] - expected) ** 2 / expected).sum())
    assert chi2 < 23.5, (counts, expected)  # chi-square, 4 degrees of freedom, p = 1e-4


# --- bad inputs -------------------------------------------------------------


def bad(arrays: dict, name: str, value) -> dict:
    return {**arrays, name: value}


@pytest.mark.parametrize(
    "strategy, mutate, argument",
    [
        ("topp", lambda a: bad(a, "candidate_ids", None), "candidate_ids"),
        ("topp", lambda a: bad(a, "candidate_scores", None), "candidate_scores"),
        ("topp", lambda a: bad(a, "candidate_lens", None), "candidate_lens"),
        ("greedy", lambda a: bad(a, "target_tokens", None), "target_tokens"),
        ("target_match", lambda a: bad(a, "target_tokens", None), "target_tokens"),
        ("greedy", lambda a: bad(a, "target_tokens", a["target_tokens"].astype(np.int32)), "target_tokens"),
        ("greedy", lambda a: bad(a, "target_tokens", a["target_tokens"].reshape(1, -1)), "target_tokens"),
        ("topp", lambda a: bad(a, "candidate_scores", a["candidate_scores"][:, :1]), "candidate_scores"),
        ("topp", lambda a: bad(a, "candidate_scores", a["candidate_scores"].astype(np.float64)), "candidate_scores"),
        ("topp", lambda a: bad(a, "candidate_lens", a["candidate_lens"][:1]), "candidate_lens"),
        ("topp", lambda a: bad(a, "candidate_ids", a["candidate_ids"][0]), "candidate_ids"),
        ("greedy", lambda a: bad(a, "accept_tokens", a["accept_tokens"][0]), "accept_tokens"),
        ("greedy", lambda a: bad(a, "draft_tokens", np.zeros((1, 3), np.int64)), "draft_tokens"),
        ("greedy", lambda a: bad(a, "draft_tokens", np.zeros((2, 5), np.int64)), "draft_tokens"),
        ("greedy", lambda a: bad(a, "accept_num", a["accept_num"].astype(np.int64)), "accept_num"),
        ("greedy", lambda a: bad(a, "seed", np.zeros(2, np.int64)), "seed"),
        ("greedy", lambda a: bad(a, "step_idx", a["step_idx"].astype(np.int32)), "step_idx"),
        ("greedy", lambda a: bad(a, "stop_flags", a["stop_flags"].astype(np.int32)), "stop_flags"),
        ("greedy", lambda a: bad(a, "is_block_step", np.zeros((1, 2), np.bool_)), "is_block_step"),
        ("greedy", lambda a: bad(a, "seq_lens_encoder", np.zeros(3, np.int32)), "seq_lens_encoder"),
        ("greedy", lambda a: bad(a, "seq_lens_this_time", np.zeros(1, np.int64)), "seq_lens_this_time"),
        ("greedy", lambda a: bad(a, "cu_seqlens_q_output", np.zeros(3, np.int32)), "cu_seqlens_q_output"),
        ("greedy", lambda a: bad(a, "cu_seqlens_q_output", np.zeros((2, 1), np.int32)), "cu_seqlens_q_output"),
        ("greedy", lambda a: bad(a, "reasoning_status", np.zeros(2, np.int32)), "reasoning_status"),
        ("greedy", lambda a: bad(a, "max_dec_len", np.zeros(1, np.int32)), "max_dec_len"),
        ("greedy", lambda a: bad(a, "end_tokens", np.zeros(0, np.int64)), "end_tokens"),
        ("greedy", lambda a: bad(a, "end_tokens", np.zeros((1, 1), np.int64)), "end_tokens"),
    ],
)
def test_bad_inputs_name_the_argument(strategy, mutate, argument):
    if strategy == "topp":
        arrays, attrs = case("topp", [5], candidates=[([9, 5], [0.6, 0.4]), ([4], [1.0])])
    else:
        arrays, attrs = case(strategy, [5], [5, 6])
    attrs["strategy"] = strategy
    with pytest.raises(ValueError, match=f"'{argument}'"):
        run_op(mutate(arrays), attrs)


@pytest.mark.parametrize(
    "attrs, pattern, error",
    [
        ({"strategy": "nucleus"}, "strategy", ValueError),
        (
            {"strategy": "rejection"},
            "'target_probs' is required",
            ValueError,
        ),  # REJECTION: tests/ops/test_verify_rejection.py
        ({"strategy": ops.VerifyStrategy.REJECTION}, "'target_probs' is required", ValueError),
        ({"strategy": 1}, "strategy", TypeError),
        ({"strategy": "greedy", "accept_all": 1}, "accept_all", TypeError),
        ({"strategy": "greedy", "reject_all": "yes"}, "reject_all", TypeError),
    ],
)
def test_bad_attributes_name_the_attribute(attrs, pattern, error):
    arrays, _ = case("greedy", [5], [5, 6])
    with pytest.raises(error, match=pattern):
        run_op(arrays, attrs)


def test_bindings_reject_unknown_strategies_and_missing_tensors():
    arrays, _ = case("greedy", [5], [5, 6])
    with pytest.raises(ValueError, match="rejection"):
        run_bindings(arrays, {"strategy": "rejection"})
    with pytest.raises(ValueError, match="candidate"):
        run_bindings(arrays, {"strategy": "topp"})


def test_empty_output_rows_emit_nothing():
    arrays, attrs = case("greedy", [5], [5, 6])
    arrays["target_tokens"] = np.zeros(0, np.int64)  # Paddle passes an empty tensor as absent
    check(arrays, attrs, [])


def test_static_graph_build_and_run():
    arrays, attrs = case("greedy", [5, 6], [5, 7, 8])
    present = {name: value for name, value in arrays.items() if value is not None}
    got = run_static(
        present, lambda feeds: ops.verify_draft_tokens(*(feeds.get(name) for name in VERIFY_NAMES), **attrs)
    )
    assert_same(got, run_reference(arrays, attrs))


def test_position_arithmetic_wraps_like_64_bit_integers():
    big = 2**63 - 1
    arrays, attrs = case("greedy", [5, 6], [5, 6, 8], step=big - 2, max_dec=big)
    check(arrays, attrs, [5, END])  # the second token reaches max_dec_len
    arrays, attrs = case("topp", [5], candidates=[([5], [1.0]), ([9, 4], [0.5, 0.5])], step=big, max_dec=big)
    arrays["max_dec_len"][0] = -(2**63)  # cur wraps to -2^63 >= -2^63: the first token ends the request
    check(arrays, attrs, [END])
    arrays["max_dec_len"][0] = big  # wrapped cur < max_dec_len: the walk goes on, the draw uses the wrapped position
    expected = run_reference(arrays, attrs)
    assert_same(run_op(arrays, attrs), expected)
    assert int(expected[1][0]) == 2

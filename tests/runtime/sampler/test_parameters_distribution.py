"""REJECTION and BLOCK with the sampling parameters on: a decode step's first token follows the distribution
a step without drafts would sample it from (the penalties over the prompt and output, a logit bias, the
temperature, min_p and top-p), whatever the drafts. Chi-square over thousands of slots whose drafts are
drawn from a draft distribution q (fixed seeds: deterministic); the same test rejects the distribution
without the parameters, so it has the power to see them."""

from __future__ import annotations

import numpy as np
import paddle
import pytest

from fastspec import reference as ref
from fastspec.runtime.config import SpeculativeConfig
from fastspec.runtime.sampler import Sampler
from fastspec.runtime.state import RequestParams, SpecState
from tests.helpers.rejection_cases import chi2_matches
from tests.helpers.sampling_cases import softmax

V, K, SLOTS = 12, 2, 2000
PROMPT = [3, 4, 5, 3]
FIRST = 9  # every slot's prefill step emits it
END = 0
TEMPERATURE, TOP_P = 0.8, 0.95
PARAMETERS = dict(
    repetition_penalty=1.6,
    presence_penalty=0.7,
    frequency_penalty=0.4,
    logit_bias={7: 1.5, 2: -3.0},
    min_p=0.35,
)


def expected_distribution(logits: np.ndarray, parameters: dict) -> np.ndarray:
    """docs/ops/process_logits.md's rules on the first row (history: the prompt and FIRST, output: FIRST),
    then softmax(x / temperature) and sample_tokens' set (min_p, top-p). ``parameters``: PARAMETERS, some
    of them (min_p alone may be left out) or none."""
    x = logits.astype(np.float32).copy()
    if "repetition_penalty" in parameters:
        for v in set(PROMPT) | {FIRST}:
            x[v] = x[v] / np.float32(1.6) if x[v] > 0 else x[v] * np.float32(1.6)
        x[FIRST] = (x[FIRST] - np.float32(0.4)) - np.float32(0.7)
        x[7] += np.float32(1.5)
        x[2] -= np.float32(3.0)
    probs = softmax(x / np.float32(TEMPERATURE))
    return ref.sampling_distribution(probs, TOP_P, 0, parameters.get("min_p", 0.0))


def first_tokens(strategy: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One decode step of SLOTS slots with drafts drawn from q: (each slot's first token of the step, its
    first draft, the first row's logits)."""
    config = SpeculativeConfig.from_dict(
        {"method": "mtp", "num_speculative_tokens": K, "verify_strategy": strategy, "sampling": {"max_dec_len": 8}}
    )
    state = SpecState(SLOTS, 16, K, end_tokens=[END], place="cpu")
    for s in range(SLOTS):
        params = RequestParams(seed=1000 + s, max_dec_len=8, temperature=TEMPERATURE, top_p=TOP_P, **PARAMETERS)
        state.insert(PROMPT, params, request_id=s)
    sampler = Sampler(config)
    rows = state.pack_rows()
    prefill = np.full((rows, V), -30.0, np.float32)
    prefill[:, FIRST] = 30.0
    sampler(paddle.to_tensor(prefill), state, draft_probs=paddle.zeros([rows, V], "float32"))
    assert all(state.output(s).tolist() == [FIRST] for s in range(SLOTS))

    rng = np.random.default_rng(5)
    row_logits = rng.normal(0.0, 1.5, (K + 1, V)).astype(np.float32)
    # q: a draft model that half knows the target (its softmax without the parameters, and noise)
    q = (0.5 * softmax(row_logits[:K] / TEMPERATURE) + 0.5 * softmax(rng.normal(0.0, 1.0, (K, V)))).astype(np.float32)
    drafts = np.stack([rng.choice(V, SLOTS, p=q[i] / q[i].sum()) for i in range(K)], axis=1)
    state.draft_tokens[:, 1:] = paddle.to_tensor(drafts.astype(np.int64))
    state.seq_lens_this_time[:] = K + 1
    rows = state.pack_rows()
    assert rows == SLOTS * (K + 1)
    logits = np.tile(row_logits, (SLOTS, 1))
    draft_probs = np.tile(np.concatenate([q, np.zeros((1, V), np.float32)]), (SLOTS, 1))
    sampler(paddle.to_tensor(logits), state, draft_probs=paddle.to_tensor(draft_probs))
    first = np.array([state.output(s)[1] for s in range(SLOTS)])
    return first, drafts[:, 0], logits[0]


@pytest.mark.parametrize("strategy", ["rejection", "block"])
def test_the_first_token_follows_the_parameters_distribution(strategy):
    first, draft, logits = first_tokens(strategy)
    want = expected_distribution(logits, PARAMETERS)
    assert (want > 0).sum() >= 3 and (want == 0).any(), "min_p and top-p should keep some tokens and drop others"
    accepted = first == draft
    assert 0.1 < accepted.mean() < 0.9, "both the accept and the resample paths should run"
    counts = np.bincount(first, minlength=V)
    fits, stat, crit = chi2_matches(counts, want)
    assert fits, f"chi2 {stat:.1f} > {crit:.1f}, counts {counts.tolist()}, want {np.round(want * SLOTS).tolist()}"
    assert not chi2_matches(counts, expected_distribution(logits, {}))[0], "the check has no power"
    without_min_p = {k: v for k, v in PARAMETERS.items() if k != "min_p"}
    assert not chi2_matches(counts, expected_distribution(logits, without_min_p))[0], "min_p changed nothing"

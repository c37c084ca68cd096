"""End to end: every sampling parameter a request may set (penalties, logit bias, bad words, min_tokens,
min_p), alone and all together with random values per request, gives the same outputs with speculation on
(n-gram and draft-model drafts, chains and trees) as with it off, under GREEDY and TARGET_MATCH; the
history rule at work (the same run judging rows without their drafts diverges); bad values named."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from fastspec.runtime import sampling_params
from fastspec.runtime.config import ConfigError, SpeculativeConfig
from fastspec.runtime.generation import default_params
from fastspec.runtime.sampling_params import InvalidRequestError
from fastspec.runtime.state import RequestParams, SpecState
from tests.helpers.runtime_cases import copy_task, generate_replay, speculation

V, END, K = 64, 0, 4
PARAMETERS = (
    "repetition_penalty",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "bad_words",
    "min_tokens",
    "min_p",
)


def random_value(rng: np.random.Generator, name: str, output: list[int]):
    """A value of ``name`` strong enough to change a replayed text (which repeats its prompt)."""
    if name == "repetition_penalty":
        return float(rng.uniform(1.2, 3.0))
    if name in ("presence_penalty", "frequency_penalty"):
        return float(rng.uniform(0.5, 3.0))
    if name == "logit_bias":
        return {int(t): float(rng.uniform(-150, 150)) for t in rng.integers(1, V, 4)}
    if name == "bad_words":  # pieces of the text the model would write, and one token alone
        start = int(rng.integers(0, len(output) - 3))
        return [output[start : start + 2], output[start + 5 : start + 8], [int(rng.integers(1, V))]]
    if name == "min_p":  # the replay model's other tokens hold (1 - peak) / (V - 1) each: cut at 0.02 of 0.7
        return float(rng.choice([rng.uniform(0.02, 0.6), 1.0]))
    return int(rng.integers(5, 30))  # min_tokens: past where some requests would end


def workload(names: tuple[str, ...], temperature: float, seed: int = 3):
    prompts, refs = copy_task(5, length=40, seed=7)
    rng = np.random.default_rng(seed)
    params = []
    for i in range(len(prompts)):
        values = {n: random_value(rng, n, refs[i]) for n in names if rng.random() < 0.8}  # some requests keep defaults
        params.append(
            RequestParams(
                seed=41 + i, max_dec_len=int(rng.integers(12, 30)), temperature=temperature, top_p=0.95, **values
            )
        )
    return prompts, refs, params


def run(
    method: str, strategy: str, names: tuple[str, ...], temperature: float, tree: bool = False, step_mode: str = "eager"
):
    prompts, refs, params = workload(names, temperature)
    config = speculation(method, strategy, tree)
    return generate_replay(method, prompts, refs, config, slots=3, peaks=(0.7, 0.6), params=params, step_mode=step_mode)


CASES = [
    (names, strategy, temperature)
    for names in [(n,) for n in PARAMETERS] + [PARAMETERS]
    for strategy, temperature in (("greedy", 0.0), ("target_match", 1.0))
    if (names, temperature) != (("min_p",), 0.0)  # min_p keeps the argmax: a greedy request's output is its own
]


@pytest.mark.parametrize(
    "names, strategy, temperature", CASES, ids=[f"{'all' if len(n) > 1 else n[0]}-{s}" for n, s, _ in CASES]
)
@pytest.mark.parametrize(
    "method, tree", [("ngram", False), ("mtp", False), ("mtp", True)], ids=["ngram", "mtp-chain", "mtp-tree"]
)
def test_speculation_on_emits_what_speculation_off_emits(names, strategy, temperature, method, tree):
    off = run("none", strategy, names, temperature)
    on = run(method, strategy, names, temperature, tree)
    baseline = run("none", strategy, (), temperature)
    assert any(not np.array_equal(a, b) for a, b in zip(off.outputs, baseline.outputs)), (
        "the parameters changed nothing"
    )
    for a, b in zip(off.outputs, on.outputs):
        np.testing.assert_array_equal(b, a)
    assert on.stats.accepted_tokens > 0


@pytest.mark.parametrize("strategy, temperature", [("greedy", 0.0), ("target_match", 1.0)])
@pytest.mark.parametrize("method", ["ngram", "mtp"])
def test_a_static_step_applies_them_too(method, strategy, temperature):
    """The processing and min_p sit in the step's static program: fixed shapes, no host read."""
    off = run("none", strategy, PARAMETERS, temperature)
    on = run(method, strategy, PARAMETERS, temperature, step_mode="static")
    for a, b in zip(off.outputs, on.outputs):
        np.testing.assert_array_equal(b, a)


def test_rows_judged_without_their_drafts_would_differ(monkeypatch):
    """The history rule at work: the same speculative run, with each row's drafts hidden from the
    processing (as engines that count only committed tokens do), no longer emits spec off's tokens."""
    names = ("frequency_penalty", "presence_penalty")
    off = run("none", "greedy", names, 0.0)
    assert all(np.array_equal(a, b) for a, b in zip(off.outputs, run("ngram", "greedy", names, 0.0).outputs))
    apply = sampling_params.LogitTables.apply

    def without_drafts(self, logits, state, rows):
        fields = (
            "token_ids_all",
            "prompt_lens",
            "step_idx",
            "cu_seqlens_q_output",
            "end_tokens",
            "trees",
            "draft_tree_tokens",
            "draft_tree_parents",
        )
        hidden = SimpleNamespace(**{f: getattr(state, f) for f in fields}, draft_tokens=state.draft_tokens * 0 - 1)
        return apply(self, logits, hidden, rows)

    monkeypatch.setattr(sampling_params.LogitTables, "apply", without_drafts)
    blind = run("ngram", "greedy", names, 0.0)
    assert any(not np.array_equal(a, b) for a, b in zip(off.outputs, blind.outputs))


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("repetition_penalty", 0.0, "repetition_penalty must be > 0"),
        ("presence_penalty", float("nan"), "presence_penalty must be a finite number"),
        ("min_p", 1.5, r"min_p must be in \[0, 1\]"),
        ("min_p", -0.25, r"min_p must be in \[0, 1\]"),
        ("min_p", float("nan"), "min_p must be a finite number"),
        ("logit_bias", {V: 1.0}, "logit_bias holds 64, not in"),
        ("bad_words", [[3], []], "bad_words holds an empty sequence"),
        ("stop", [[-1]], "stop holds -1"),
        ("stop_token_ids", [V + 5], "stop_token_ids holds 69"),
        ("min_tokens", -1, "min_tokens must be an integer >= 0"),
        ("logprobs", -2, r"logprobs must be None or an integer in \[0, 20\]"),
    ],
)
def test_a_bad_value_is_named_at_insert_and_changes_nothing(name, value, message):
    state = SpecState(2, 32, K, [END], "cpu", vocab_size=V)
    state.insert([5, 6, 7], RequestParams(1, 8, frequency_penalty=0.5), request_id="a")
    before = {n: getattr(state.logit_tables, n).numpy().copy() for n in ("frequency_penalty", "bad_words")}
    min_p = state.min_p.numpy().copy()
    free = state.free_slots
    with pytest.raises(InvalidRequestError, match=f"request b: {message}"):
        state.insert([8, 9], RequestParams(2, 8, **{name: value}), request_id="b")
    assert state.free_slots == free
    for n, array in before.items():
        np.testing.assert_array_equal(getattr(state.logit_tables, n).numpy(), array)
    np.testing.assert_array_equal(state.min_p.numpy(), min_p)


def test_the_config_holds_the_defaults_and_names_a_bad_one():
    config = SpeculativeConfig.from_dict(
        {
            "sampling": {
                "repetition_penalty": 1.3,
                "bad_words": [[4, 5]],
                "logit_bias": {7: 300.0},
                "min_tokens": 2,
                "min_p": 0.25,
            }
        }
    )
    prompts, _ = copy_task(2, length=10)
    params = default_params(config, 2)
    assert params[1].repetition_penalty == 1.3 and params[1].bad_words == [[4, 5]] and params[0].min_tokens == 2
    assert params[1].min_p == 0.25
    assert params[0].bad_words is not params[1].bad_words  # each request its own copy
    state = SpecState(2, 128, K, [END], "cpu")
    state.insert(prompts[0], params[0])
    assert state.logit_tables.logit_bias_values.numpy()[0, 0] == 100.0  # clamped
    assert state.min_p.numpy()[0] == 0.25
    with pytest.raises(ConfigError, match="sampling: request defaults: repetition_penalty must be > 0"):
        SpeculativeConfig.from_dict({"sampling": {"repetition_penalty": -1.0}})
    with pytest.raises(ConfigError, match=r"sampling: request defaults: min_p must be in \[0, 1\]"):
        SpeculativeConfig.from_dict({"sampling": {"min_p": 1.5}})

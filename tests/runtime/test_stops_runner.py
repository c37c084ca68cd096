"""End to end: a request's stop token ids and stop sequences end it exactly where a run without speculation
does: alone and with every other sampling parameter, random per request, speculation on (n-gram and
draft-model drafts, chains and trees) equals speculation off under GREEDY and TARGET_MATCH, and both equal
the run without stops cut by the rule of docs/ops/update_model_status.md; through SpecEngine the streamed
tokens stop at the same place (preempted requests too) with finish reason "stop"; a step still reads the
device once; the YAML defaults; bad values named at insert."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fastspec.demo.models import ReplayModel
from fastspec.runtime.config import SpeculativeConfig
from fastspec.runtime.engine import SpecEngine
from fastspec.runtime.generation import default_params, generate
from fastspec.runtime.sampling_params import InvalidRequestError, TableWidths
from fastspec.runtime.state import RequestParams, SpecState
from tests.helpers import serving
from tests.helpers.host_reads import counted_reads
from tests.helpers.runtime_cases import copy_task, generate_replay, speculation

V, END, K = 64, 0, 4
STOPS = ("stop_token_ids", "stop", "min_tokens")
OTHERS = ("repetition_penalty", "frequency_penalty", "presence_penalty", "logit_bias", "bad_words", "logprobs", "min_p")


def other_values(rng: np.random.Generator, text: list[int], names: tuple[str, ...]) -> dict:
    """min_tokens, the logit parameters, min_p and logprobs, random."""
    values = {}
    if "min_tokens" in names and rng.random() < 0.7:
        values["min_tokens"] = int(rng.integers(1, 20))
    if "repetition_penalty" in names:
        values.update(
            repetition_penalty=float(rng.uniform(1.0, 1.5)),
            frequency_penalty=float(rng.uniform(0.0, 0.5)),
            presence_penalty=float(rng.uniform(0.0, 0.5)),
            logit_bias={int(t): float(rng.uniform(-3, 3)) for t in rng.integers(3, V, 3)},
            bad_words=[text[5:7], [int(rng.integers(3, V))]],
            logprobs=None if rng.random() < 0.3 else int(rng.integers(0, 4)),
            min_p=float(rng.choice([0.0, 0.05, 0.2])),
        )
    return values


def stop_values(rng: np.random.Generator, output: list[int], names: tuple[str, ...]) -> dict:
    """Stops cut from what the request writes without them (so that most of them hit, some at the last
    token, some only by a later occurrence), and random ones."""
    values = {}
    if "stop_token_ids" in names and rng.random() < 0.8 and len(output) > 1:  # a one-token output has none to cut
        values["stop_token_ids"] = [int(output[rng.integers(1, len(output))]), int(rng.integers(3, V))]
    if "stop" in names and rng.random() < 0.8:
        length = int(rng.integers(1, 4))
        start = int(rng.integers(0, max(len(output) - length, 0) + 1))
        values["stop"] = [[int(t) for t in output[start : start + length]], rng.integers(3, V, 2).tolist()]
    return values


def workload(names: tuple[str, ...], strategy: str, temperature: float, seed: int = 11):
    """Requests with random values of ``names``, and the run of those requests without stops (one token longer):
    the stops are cut from its outputs."""
    prompts, refs = copy_task(5, length=40, seed=7)
    rng = np.random.default_rng(seed)
    free_params = [
        RequestParams(
            17 + i,
            int(rng.integers(10, 32)) + 1,
            temperature=temperature,
            top_p=0.95,
            **other_values(rng, refs[i], names),
        )
        for i in range(len(prompts))
    ]
    free = run("none", strategy, free_params, temperature)
    params = [
        dataclasses.replace(p, max_dec_len=p.max_dec_len - 1, **stop_values(rng, out[: p.max_dec_len - 1], names))
        for p, out in zip(free_params, free.outputs)
    ]
    return params, free


def run(method: str, strategy: str, params: list, temperature: float, tree: bool = False, step_mode: str = "eager"):
    prompts, refs = copy_task(5, length=40, seed=7)
    config = speculation(method, strategy, tree)
    return generate_replay(
        method, prompts, refs, config, slots=3, peaks=(0.7, 0.6), max_model_len=128, params=params, step_mode=step_mode
    )


def cut(tokens: list[int], params: RequestParams) -> tuple[list[int], str]:
    """The rule of update_model_status applied to a run without stops: the output up to its first end token,
    stop token or stop sequence (counted once min_tokens are out), or max_dec_len's; and the finish reason."""
    out = []
    for token in tokens:
        if len(out) + 1 >= params.max_dec_len and token != END:  # the last token is an end token, a stop's too
            return [*out, END], "length"
        out.append(int(token))
        if token == END:
            return out, "length" if len(out) >= params.max_dec_len else "end"
        if token in params.stop_token_ids or (
            len(out) >= params.min_tokens and any(out[-len(s) :] == list(s) for s in params.stop)
        ):
            return out, "stop"
    raise AssertionError("the run without stops ended first")


def comparable(params: RequestParams) -> bool:
    """Whether the run without stops sees the same logits: min_tokens also bans the stop ids until then."""
    return not (params.stop_token_ids and params.min_tokens > 0)


NAME_SETS = {
    "ids": ("stop_token_ids",),
    "sequences": ("stop",),
    "sequences-min_tokens": ("stop", "min_tokens"),
    "all": (*STOPS, *OTHERS),
}
CASES = [(k, s, t) for k in NAME_SETS for s, t in (("greedy", 0.0), ("target_match", 1.0))]


@pytest.mark.parametrize("names, strategy, temperature", CASES, ids=[f"{k}-{s}" for k, s, _ in CASES])
@pytest.mark.parametrize(
    "method, tree", [("ngram", False), ("mtp", False), ("mtp", True)], ids=["ngram", "mtp-chain", "mtp-tree"]
)
def test_speculation_on_stops_where_speculation_off_does(names, strategy, temperature, method, tree):
    params, free = workload(NAME_SETS[names], strategy, temperature)
    off = run("none", strategy, params, temperature)
    on = run(method, strategy, params, temperature, tree)
    for a, b in zip(off.outputs, on.outputs):
        np.testing.assert_array_equal(b, a)
    assert on.logprobs == off.logprobs  # one per kept token: none for the tokens dropped after a stop
    for out, lp in zip(off.outputs, off.logprobs):
        assert lp is None or len(lp) == len(out)
    assert ("logprobs" in NAME_SETS[names]) == any(lp for lp in off.logprobs)
    assert on.stats.accepted_tokens > 0
    checked = stopped = 0
    for i, p in enumerate(params):
        out = off.outputs[i].tolist()
        if comparable(p):
            expected, _ = cut(free.outputs[i].tolist(), p)
            assert out == expected, f"request {i}"
            checked += 1
        stopped += len(out) < p.max_dec_len and out[-1] != END  # only a stop ends a request so
    assert checked >= 1 and stopped >= 2, (checked, stopped)


@pytest.mark.parametrize("method", ["ngram", "mtp"])
def test_a_static_step_stops_too(method):
    """The stops sit in the step's static program: fixed-width tables, no host read."""
    params, _ = workload(STOPS, "greedy", 0.0)
    off = run("none", "greedy", params, 0.0)
    on = run(method, "greedy", params, 0.0, step_mode="static")
    for a, b in zip(off.outputs, on.outputs):
        np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize("proposer, strategy", [("ngram", "target_match"), ("mtp_tree", "greedy")])
def test_the_engine_streams_up_to_the_stop_and_says_so(proposer, strategy):
    """Through SpecEngine, with requests added at random steps, preempted and resumed: each request streams
    what it produces alone without speculation, its stop last, with finish reason "stop"."""
    work = serving.copy_workload(8, seed=5, temperature=0.0 if strategy == "greedy" else 1.0, max_dec_len=(8, 30))
    rng = np.random.default_rng(2)
    for i, p in work.params.items():
        text = work.refs[i]
        start = int(rng.integers(1, 12))
        p.stop = [text[start : start + 2]] if i % 2 else []
        p.stop_token_ids = [int(text[start + 3])] if i % 3 == 0 else []
    ids = range(len(work.prompts))
    expected = serving.alone(work, ids, serving.max_len(work))
    model, head = serving.target_and_head(proposer, work.refs)
    engine = SpecEngine(
        model,
        serving.config(proposer, strategy),
        max_num_seqs=3,
        max_model_len=serving.max_len(work),
        end_tokens=[END],
        draft_model=head,
    )
    served = serving.serve(engine, work, ids, [], rng, abort_rate=0.0)
    assert served.preemptions > 0
    reasons = []
    for i in ids:
        assert served.streamed[i] == expected[i], f"request {i}"
        p = work.params[i]
        reasons.append(served.reasons[i])
        if served.reasons[i] == "stop":
            last = served.streamed[i][-1]
            assert last in p.stop_token_ids or any(served.streamed[i][-len(s) :] == s for s in p.stop)
    assert reasons.count("stop") >= 2, reasons


def test_a_step_with_stops_still_reads_the_device_once():
    params, _ = workload(STOPS, "target_match", 1.0)
    prompts, refs = copy_task(5, length=40, seed=7)
    with counted_reads() as reads:
        per_step = []
        last = [0]

        def progress(*_):
            per_step.append(reads[0] - last[0])
            last[0] = reads[0]

        model = ReplayModel(refs, V, end_token=END, peak=0.7)
        config = SpeculativeConfig.from_dict({"method": "ngram", "num_speculative_tokens": K})
        generate(model, prompts, config, max_num_seqs=3, end_tokens=[END], params=params, progress=progress)
    assert per_step and max(per_step) <= 1, per_step


def test_the_config_holds_stop_defaults():
    config = SpeculativeConfig.from_dict({"sampling": {"stop_token_ids": [7], "stop": [[4, 5], [9]]}})
    params = default_params(config, 2)
    assert params[1].stop_token_ids == [7] and params[0].stop == [[4, 5], [9]]
    assert params[0].stop is not params[1].stop  # each request its own copy
    state = SpecState(2, 128, K, [END], "cpu")
    state.insert([3, 4, 5], params[0])
    assert state.logit_tables.stop_sequences.numpy()[0, :6].tolist() == [4, 5, -1, 9, -1, -1]


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("stop", [[3] * 40, [4] * 30], "stop takes more than 64 entries"),
        ("stop", [[3, V]], "stop holds 64, not in"),
        ("stop", [[]], "stop holds an empty sequence"),
        ("stop_token_ids", list(range(3, 20)), "stop_token_ids has 17 ids, at most 16"),
    ],
)
def test_a_bad_stop_is_named_at_insert_and_changes_nothing(name, value, message):
    state = SpecState(2, 128, K, [END], "cpu", vocab_size=V)
    state.insert([5, 6, 7], RequestParams(1, 8, stop=[[5, 6]]), request_id="a")
    before = state.logit_tables.stop_sequences.numpy().copy()
    with pytest.raises(InvalidRequestError, match=f"request b: {message}"):
        state.insert([8, 9], RequestParams(2, 8, **{name: value}), request_id="b")
    assert state.free_slots == [1]
    np.testing.assert_array_equal(state.logit_tables.stop_sequences.numpy(), before)


def test_the_widest_stop_table_fits():
    width = TableWidths().stop
    state = SpecState(1, 128, K, [END], "cpu", vocab_size=V)
    state.insert([5], RequestParams(1, 8, stop=[[3] * (width - 1)]))
    assert state.logit_tables.stop_sequences.numpy()[0].tolist() == [3] * (width - 1) + [-1]

"""Log-probabilities (``RequestParams.logprobs``): the keys that carry them home are exact, they equal the
numpy reference on the target's processed rows, and speculation on returns exactly what speculation off
returns (tokens and log-probabilities, bit for bit: n-gram and draft-model drafts, chains and trees, with
the other sampling parameters on), streamed, through a static step, across preemption, in one read a step."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import paddle
import pytest

from fastspec.demo.models import ReplayModel
from fastspec.reference.logits import process_logits
from fastspec.reference.logprobs import logprob_keys, token_logprobs
from fastspec.runtime import logprobs as device
from fastspec.runtime.config import ConfigError, SpeculativeConfig
from fastspec.runtime.engine import SpecEngine
from fastspec.runtime.generation import default_params, generate
from fastspec.runtime.sampling_params import InvalidRequestError, TableWidths, sequences_row
from fastspec.runtime.state import RequestParams, SpecState
from tests.helpers.host_reads import counted_reads
from tests.helpers.runtime_cases import copy_task, generate_replay, speculation

V, END, K = 64, 0, 4
WIDTH = TableWidths().logprobs


# -- the keys -------------------------------------------------------------------------------


def float32_cases(rng: np.random.Generator) -> np.ndarray:
    """Random negative float32 bit patterns (subnormals and -inf included), every power of two and its
    neighbours, and the zeros: every kind of value a log-probability can take."""
    random = rng.integers(0x80000000, 0xFF800001, 100_000, dtype=np.int64).astype(np.uint32).view(np.float32)
    powers = -np.ldexp(1.0, np.arange(-149, 128)).astype(np.float32)
    edges = np.float32([0.0, -0.0, -np.inf, -np.finfo(np.float32).max, -np.finfo(np.float32).tiny])
    return np.concatenate(
        [random, powers, np.nextafter(powers, np.float32(0)), np.nextafter(powers, np.float32(-np.inf)), edges]
    )


def test_keys_carry_every_float32_exactly_and_order_as_the_reference():
    """The op's key layout (its numpy twin, which the op tests hold the kernels to bit for bit) against the
    runtime's decode."""
    rng = np.random.default_rng(0)
    values = float32_cases(rng)
    ids = rng.integers(0, 1 << 20, values.size)
    values[:50], ids[50:100] = values[50:100], ids[:50]  # equal values with other ids, and the reverse
    keys = logprob_keys(values, ids)
    back, back_ids = device.decode(keys)
    np.testing.assert_array_equal(back_ids, ids)
    same = back == values  # the same bits, but for a zero's sign (which a key drops)
    assert same.all(), values[~same][:5]
    order = np.lexsort((ids, -values.astype(np.float64)))  # larger first, then the smaller id
    np.testing.assert_array_equal(keys[np.argsort(-keys, kind="stable")], keys[order])
    nan = logprob_keys(np.float32([np.nan]), [3])
    np.testing.assert_array_equal(device.decode(nan)[0], [-np.inf])  # NaN reads as -inf


def logprobs_state(temperature, accept_tokens, accept_num, cu):
    """What ``step_logprobs`` reads of a state: a chain step's packing and emitted tokens."""
    tensor = paddle.to_tensor
    return SimpleNamespace(
        sample_temperature=tensor(np.float32(temperature)),
        accept_tokens=tensor(np.asarray(accept_tokens, np.int64)),
        accept_num=tensor(np.asarray(accept_num, np.int32)),
        cu_seqlens_q_output=tensor(np.asarray(cu, np.int32)),
        trees=False,
        max_num_seqs=len(temperature),
    )


def test_a_step_records_each_emitted_token_against_its_own_row():
    """Random rows with ties and banned tokens; slot b's token j is judged by row cu[b] + j."""
    rng = np.random.default_rng(1)
    cu, accept_num = [0, 3, 4, 7], [3, 1, 2]
    rows = 7
    logits = (rng.standard_normal((rows, V)) * 3).astype(np.float32)
    logits[1, 10:30] = logits[1, 9]  # a plateau across the n-th place
    logits[2, : V - 3] = -np.inf  # three tokens left: the list ends in -inf, smallest ids first
    logits[4, 7] = 80.0  # one token holds (almost) all the mass
    temperature = [1.0, 0.5, 2.0]
    accept = np.full((3, K + 1), -1, np.int64)
    for b, n in enumerate(accept_num):
        accept[b, :n] = rng.integers(0, V, n)
    accept[0, 2] = 1  # a banned token drawn anyway: -inf
    state = logprobs_state(temperature, accept, accept_num, cu)
    record = device.step_logprobs(paddle.to_tensor(logits), state, WIDTH).numpy()
    record = record.reshape(3, K + 1, 1 + WIDTH)
    for b, n in enumerate(accept_num):
        got = device.token_logprobs(record[b], n, WIDTH)
        at = np.arange(cu[b], cu[b] + n)
        chosen, ids, values = token_logprobs(logits[at], np.full(n, temperature[b]), accept[b, :n], WIDTH)
        for j in range(n):
            np.testing.assert_allclose(got[j][0], chosen[j], rtol=1e-6, atol=1e-5)
            np.testing.assert_array_equal([i for i, _ in got[j][1]], ids[j])
            np.testing.assert_allclose([p for _, p in got[j][1]], values[j], rtol=1e-6, atol=1e-5)


# -- end to end -----------------------------------------------------------------------------


def workload(n_requests: int = 5, seed: int = 3):
    """Random logprobs (None, 0, some, the most) and every logit parameter on for some requests."""
    prompts, refs = copy_task(n_requests, length=40, seed=7)
    rng = np.random.default_rng(seed)
    choices = [None, 0, 1, 5, WIDTH]
    params = []
    for i in range(n_requests):
        others = {}
        if rng.random() < 0.7:
            others = dict(
                repetition_penalty=float(rng.uniform(1.1, 2.0)),
                frequency_penalty=float(rng.uniform(0.2, 1.5)),
                presence_penalty=float(rng.uniform(0.2, 1.5)),
                logit_bias={int(t): float(rng.uniform(-5, 5)) for t in rng.integers(1, V, 3)},
                bad_words=[refs[i][3:5], [int(rng.integers(3, V))]],
                min_tokens=int(rng.integers(0, 12)),
            )
        params.append(
            RequestParams(
                seed=41 + i,
                max_dec_len=int(rng.integers(12, 30)),
                logprobs=choices[i % len(choices)],
                **others,
            )
        )
    return prompts, refs, params


def with_temperature(params, temperature):
    for p in params:
        p.temperature = temperature
    return params


def run(
    method,
    strategy="greedy",
    tree=False,
    step_mode="eager",
    temperature=0.0,
    model_wrapper=None,
    progress=None,
    asks=None,
):
    """``asks``: each request's logprobs instead of the workload's."""
    prompts, refs, params = workload()
    params = with_temperature(params, temperature)
    for p, n in zip(params, asks or []):
        p.logprobs = n
    result = generate_replay(
        method,
        prompts,
        refs,
        speculation(method, strategy, tree),
        slots=3,
        peaks=(0.9, 0.9),
        model_wrapper=model_wrapper,
        params=params,
        step_mode=step_mode,
        progress=progress,
    )
    return result, params


class Recorder:
    """The model's raw logits at every row, by (request, index of the token the row predicts)."""

    def __init__(self, model):
        self.model, self.rows = model, {}

    def __call__(self, inputs):
        out = self.model(inputs)
        logits = out[0] if isinstance(out, tuple) else out  # (logits, hidden) for a draft head
        slots, positions, prompt_lens = (t.numpy() for t in (inputs.row_slot, inputs.row_pos, inputs.prompt_lens))
        values = logits.numpy()
        for row, slot in enumerate(slots):
            if slot >= 0:
                index = int(positions[row]) + 1 - int(prompt_lens[slot])
                self.rows[(inputs.request_ids[slot], index)] = values[
                    row
                ].copy()  # the model's rows depend on these alone
        return out


def reference_row(raw, prompt, output, j, p: RequestParams):
    """Token j's row as the sampler sees it: the reference processing with history prompt + output[:j]."""
    widths = TableWidths()
    history = np.full((1, len(prompt) + j + 1), -1, np.int64)
    history[0, : len(prompt)], history[0, len(prompt) : len(prompt) + j] = prompt, output[:j]
    ids = np.full((1, widths.logit_bias), -1, np.int64)
    bias = np.zeros((1, widths.logit_bias), np.float32)
    for k, (t, v) in enumerate(sorted(p.logit_bias.items())):
        ids[0, k], bias[0, k] = t, v
    f32 = lambda x: np.float32([x])  # noqa: E731
    return process_logits(
        raw[None].astype(np.float32),
        history,
        np.int64([len(prompt)]),
        np.int64([j]),
        np.full((1, 1), -1, np.int64),
        np.int32([0]),
        np.int32([0, 1]),
        f32(p.repetition_penalty),
        f32(p.presence_penalty),
        f32(p.frequency_penalty),
        np.int64([p.min_tokens]),
        np.int64([END]),
        np.full((1, widths.stop_token_ids), -1, np.int64),
        ids,
        bias,
        sequences_row(p.bad_words, widths.bad_words)[None],
    )


REFERENCE_CASES = [
    ("none", False, "greedy", 0.0),
    ("none", False, "target_match", 0.7),
    ("mtp", False, "rejection", 0.7),
    ("mtp", True, "rejection", 0.7),
]


@pytest.mark.parametrize(
    "method, tree, strategy, temperature",
    REFERENCE_CASES,
    ids=["off-greedy", "off-sampled", "mtp-rejection", "mtp-tree-rejection"],
)
def test_logprobs_equal_the_reference_on_the_processed_rows(method, tree, strategy, temperature):
    """Each request's tokens against the reference: its processing with the output before the token as
    history, its temperature (1 when greedy), then the log-softmax and the n best; a request that did not
    ask gets None, logprobs = 0 only its tokens'. Under REJECTION with a draft model too: the target's row
    at the token's position, never the draft's distribution or the residual a rejected draft leaves."""
    recorders = []

    def record(model):
        recorders.append(Recorder(model))
        return recorders[-1]

    result, params = run(method, strategy, tree, temperature=temperature, model_wrapper=record)
    assert method == "none" or result.stats.accepted_tokens > 0
    prompts, _, _ = workload()
    rows = recorders[0].rows
    for i, p in enumerate(params):
        got, output = result.logprobs[i], result.outputs[i].tolist()
        if p.logprobs is None:
            assert got is None
            continue
        assert len(got) == len(output) > 0
        temp = 1.0 if temperature == 0 else temperature
        for j, token in enumerate(output):
            row = reference_row(rows[(i, j)], prompts[i], output, j, p)
            chosen, ids, values = token_logprobs(row, [temp], [token], p.logprobs)
            logprob, best = got[j]
            np.testing.assert_allclose(logprob, chosen[0], rtol=1e-6, atol=1e-5)
            assert [t for t, _ in best] == ids[0].tolist()
            np.testing.assert_allclose([v for _, v in best], values[0], rtol=1e-6, atol=1e-5)
    assert any(p.logprobs == 0 for p in params) and all(
        all(best == [] for _, best in result.logprobs[i]) for i, p in enumerate(params) if p.logprobs == 0
    )


CASES = [
    (method, tree, strategy, temperature)
    for method, tree in (("ngram", False), ("mtp", False), ("mtp", True))
    for strategy, temperature in (("greedy", 0.0), ("target_match", 1.0))
]


@pytest.mark.parametrize(
    "method, tree, strategy, temperature",
    CASES,
    ids=[f"{m}{'-tree' if t else ''}-{s}" for m, t, s, _ in CASES],
)
def test_speculation_on_returns_what_speculation_off_returns_bit_for_bit(method, tree, strategy, temperature):
    off, _ = run("none", strategy, temperature=temperature)
    on, _ = run(method, strategy, tree, temperature=temperature)
    assert on.stats.accepted_tokens > 0
    for a, b in zip(off.outputs, on.outputs):
        np.testing.assert_array_equal(b, a)
    assert on.logprobs == off.logprobs  # Python floats from float32: equal means the same bits here
    assert any(lp is None for lp in on.logprobs) and any(lp for lp in on.logprobs)


@pytest.mark.parametrize(
    "method, tree", [("ngram", False), ("mtp", False), ("mtp", True)], ids=["ngram", "mtp", "mtp-tree"]
)
def test_a_static_step_returns_them_too(method, tree):
    """The first requests do not ask and the last do: steps switch from the program without
    log-probabilities to the one with them (each built once)."""
    asks = [None, None, None, 3, WIDTH]
    off, _ = run("none", "target_match", temperature=1.0, asks=asks)
    on, _ = run(method, "target_match", tree, step_mode="static", temperature=1.0, asks=asks)
    for a, b in zip(off.outputs, on.outputs):
        np.testing.assert_array_equal(b, a)
    assert on.logprobs == off.logprobs
    assert on.stats.program_builds == {"prepare": 1, "finish": 2}


def test_streamed_logprobs_match_their_tokens_and_survive_preemption():
    """Through SpecEngine: each step's logprobs are those of its new tokens; preempting every running request
    after every step (each resumes by recomputing its prefix) changes nothing."""
    prompts, refs, params = workload()
    expected, _ = run("none", "target_match", temperature=1.0)

    def serve(preempt: bool):
        config = {"method": "ngram", "num_speculative_tokens": K, "verify_strategy": "target_match"}
        config = SpeculativeConfig.from_dict(config)
        engine = SpecEngine(
            ReplayModel(refs, V, end_token=END, peak=0.9),
            config,
            max_num_seqs=3,
            max_model_len=128,
            end_tokens=[END],
        )
        for i, (prompt, p) in enumerate(zip(prompts, with_temperature(workload()[2], 1.0))):
            engine.add_request(i, prompt, p)
        got, tokens = {}, {}
        while engine.has_unfinished():
            for out in engine.step():
                tokens.setdefault(out.request_id, []).extend(out.new_tokens)
                if out.logprobs is None:
                    assert params[out.request_id].logprobs is None
                    continue
                assert len(out.logprobs) == len(out.new_tokens)
                got.setdefault(out.request_id, []).extend(out.logprobs)
            if preempt:
                for i in engine.running_ids():
                    engine.preempt(i)
        return got, tokens

    for preempt in (False, True):
        got, tokens = serve(preempt)
        assert tokens == {i: out.tolist() for i, out in enumerate(expected.outputs)}
        assert got == {i: lp for i, lp in enumerate(expected.logprobs) if lp is not None}


@pytest.mark.parametrize("method, step_mode", [("none", "eager"), ("ngram", "eager"), ("ngram", "static")])
def test_still_one_host_read_a_step(method, step_mode):
    run(method, "target_match", step_mode=step_mode, temperature=1.0)  # a static build happens outside the count
    per_step, last = [], [0]
    with counted_reads() as reads:

        def progress(*_):
            per_step.append(reads[0] - last[0])
            last[0] = reads[0]

        result, _ = run(method, "target_match", step_mode=step_mode, temperature=1.0, progress=progress)
    assert len(per_step) == result.stats.steps > 10
    assert max(per_step) <= 1, f"reads per step: {per_step}"
    assert any(result.logprobs)


def test_a_request_asks_for_at_most_the_table_width_and_the_config_holds_the_default():
    state = SpecState(2, 32, K, [END], "cpu", vocab_size=V)
    for bad in (WIDTH + 1, -1, True, 2.0):
        with pytest.raises(
            InvalidRequestError, match=rf"request b: logprobs must be None or an integer in \[0, {WIDTH}\]"
        ):
            state.insert([3, 4], RequestParams(1, 8, logprobs=bad), request_id="b")
    assert state.free_slots == [0, 1]
    state.insert([3, 4], RequestParams(1, 8, logprobs=WIDTH), request_id="c")
    config = SpeculativeConfig.from_dict({"sampling": {"logprobs": 3}})
    assert [p.logprobs for p in default_params(config, 2)] == [3, 3]
    with pytest.raises(ConfigError, match="sampling: request defaults: logprobs must be None or an integer"):
        SpeculativeConfig.from_dict({"sampling": {"logprobs": WIDTH + 1}})


def test_grammar_masks_are_part_of_the_distribution_and_speculation_still_changes_nothing():
    """Structured output: a constrained row's tokens the grammar forbids read -inf (more than the grammar
    allows are listed), a free request's never do; spec on returns spec off's logprobs bit for bit."""
    pytest.importorskip("llguidance")
    pytest.importorskip("tokenizers")
    from tests.helpers import structured_cases as sc

    prompts, refs, params = sc.workload(6, ("regex", "schema", None))
    params = [
        RequestParams(p.seed, 40, temperature=1.0, structured_output=p.structured_output, logprobs=WIDTH)
        for p in params
    ]

    def run_with(config):
        model = ReplayModel(refs, sc.vocab_size(), end_token=sc.END, peak=0.9)
        config = SpeculativeConfig.from_dict(config)
        return generate(
            model, prompts, config, params=params, end_tokens=[sc.END], max_num_seqs=3, tokenizer=sc.tokenizer()
        )

    off = run_with({"method": "none"})
    on = run_with({"method": "ngram", "num_speculative_tokens": K, "verify_strategy": "target_match"})
    for a, b in zip(off.outputs, on.outputs):
        np.testing.assert_array_equal(b, a)
    assert on.logprobs == off.logprobs and on.stats.accepted_tokens > 0
    banned = [any(v == -np.inf for _, listed in lp for _, v in listed) for lp in off.logprobs]
    assert banned == [p.structured_output is not None for p in params]
    assert all(v > -np.inf for lp in off.logprobs for v, _ in lp)  # every emitted token the grammar allowed

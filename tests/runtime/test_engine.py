"""``SpecEngine``: streaming, finish reasons, abort, preemption under a KV budget, named errors for bad
calls (which change nothing), and a model call that raises (nothing advanced, the engine goes on)."""

from __future__ import annotations

import pytest

from fastspec.runtime.engine import ModelCallError, RequestError, RequestOutput, SpecEngine
from fastspec.runtime.generation import generate
from fastspec.runtime.state import RequestParams
from tests.helpers.serving import END, ContextReplayModel, V, alone, config, copy_workload, max_len

N = 6


def make(work, proposer="ngram", strategy="target_match", batch=3, **kw):
    model = kw.pop("model", None) or ContextReplayModel(work.refs, V, end_token=END, peak=0.8)
    return SpecEngine(
        model, config(proposer, strategy), max_num_seqs=batch, max_model_len=max_len(work), end_tokens=[END], **kw
    )


def run_all(engine, outputs=None, reasons=None, limit=1000):
    outputs = {} if outputs is None else outputs
    reasons = {} if reasons is None else reasons
    for _ in range(limit):
        if not engine.has_unfinished():
            break
        for out in engine.step():
            outputs.setdefault(out.request_id, []).extend(out.new_tokens)
            if out.finished:
                assert out.request_id not in reasons
                reasons[out.request_id] = out.finish_reason
        engine.check_invariants()
    return outputs, reasons


@pytest.fixture(scope="module")
def work():
    return copy_workload(N, seed=21, temperature=1.0, max_dec_len=(4, 16))


@pytest.fixture(scope="module")
def expected(work):
    return alone(work, range(N), max_len(work))


def add_all(engine, work, ids=range(N)):
    for i in ids:
        engine.add_request(i, work.prompts[i], work.params[i])


def test_streamed_tokens_make_up_generate_outputs_and_reasons(work, expected):
    engine = make(work)
    add_all(engine, work)
    first = engine.step()
    assert all(isinstance(o, RequestOutput) and o.logprobs is None for o in first)
    assert sorted(o.request_id for o in first) == [0, 1, 2]  # three slots: the first three prefill, one token each
    assert all(len(o.new_tokens) == 1 for o in first)
    outputs, reasons = run_all(engine, {o.request_id: list(o.new_tokens) for o in first})
    result = generate(
        ContextReplayModel(work.refs, V, end_token=END, peak=0.8),
        [work.prompts[i] for i in range(N)],
        config("ngram", "target_match"),
        max_num_seqs=3,
        max_model_len=max_len(work),
        end_tokens=[END],
        params=[work.params[i] for i in range(N)],
    )
    for i in range(N):
        assert outputs[i] == result.outputs[i].tolist() == expected[i]
        hit_length = len(outputs[i]) == work.params[i].max_dec_len
        assert reasons[i] == ("length" if hit_length else "end")
        assert outputs[i][-1] == END  # a request that reaches max_dec_len ends with the end token too
    assert not engine.has_unfinished()


def test_abort_reports_once_on_the_next_step_and_frees_the_slot(work, expected):
    engine = make(work, batch=2)
    add_all(engine, work)
    first = {o.request_id: list(o.new_tokens) for o in engine.step()}
    running = engine.running_ids()
    engine.abort(running[0])  # running
    engine.abort(5)  # still waiting
    assert running[0] not in engine and 5 not in engine
    assert engine.has_unfinished()
    assert len(engine.state.free_slots) == 1
    engine.check_invariants()
    out = engine.step()
    aborted = [o for o in out if o.finish_reason == "aborted"]
    assert sorted(o.request_id for o in aborted) == sorted([running[0], 5])
    assert all(o.finished and o.new_tokens == [] for o in aborted)
    for o in out:
        first.setdefault(o.request_id, []).extend(o.new_tokens)
    outputs, reasons = run_all(engine, first)
    for i in set(range(N)) - {running[0], 5}:
        assert reasons[i] in ("end", "length")
        assert outputs[i] == expected[i]
    with pytest.raises(RequestError, match=r"SpecEngine.abort: unknown request 5"):
        engine.abort(5)


def test_bad_calls_get_named_errors_and_change_nothing(work, expected):
    engine = make(work, batch=2, kv_budget_tokens=10 * max_len(work))
    add_all(engine, work, range(3))
    engine.step()
    before = (engine.running_ids(), engine.num_waiting, engine.held_tokens(), engine.state.free_slots)
    long = [5] * max_len(work)
    bad = [
        (
            lambda: engine.add_request(0, work.prompts[0], work.params[0]),
            r"add_request: request 0 is already in the engine",
        ),
        (lambda: engine.add_request(2, [1, 2], work.params[2]), r"request 2 is already"),
        (
            lambda: engine.add_request(9, long, RequestParams(1, 4)),
            r"request 9: prompt length \d+ \+ max_dec_len 4 exceeds max_model_len",
        ),
        (lambda: engine.add_request(9, [], RequestParams(1, 4)), r"request 9: the prompt must be a non-empty"),
        (lambda: engine.add_request(9, [3, -1], RequestParams(1, 4)), r"request 9: the prompt holds token id -1"),
        (lambda: engine.add_request(9, [3.5], RequestParams(1, 4)), r"request 9: the prompt must be"),
        (lambda: engine.add_request(9, [3], RequestParams(1, 0)), r"request 9: max_dec_len must be >= 1"),
        (lambda: engine.add_request(9, [3], {"seed": 1}), r"request 9: params must be RequestParams"),
        (lambda: engine.add_request([9], [3], RequestParams(1, 4)), r"request id must be hashable"),
        (lambda: engine.add_request(None, [3], RequestParams(1, 4)), r"request id must not be None"),
        (lambda: engine.abort(42), r"SpecEngine.abort: unknown request 42"),
        (lambda: engine.preempt(42), r"SpecEngine.preempt: unknown request 42"),
        (lambda: engine.preempt([1]), r"SpecEngine.preempt: unknown request \[1\]"),
    ]
    waiting = [i for i in range(3) if i not in engine.running_ids()]
    bad.append((lambda: engine.preempt(waiting[0]), rf"SpecEngine.preempt: request {waiting[0]} is not running"))
    for call, message in bad:
        with pytest.raises(RequestError, match=message):
            call()
        assert (engine.running_ids(), engine.num_waiting, engine.held_tokens(), engine.state.free_slots) == before
        engine.check_invariants()
    small = make(work, kv_budget_tokens=20)
    with pytest.raises(RequestError, match=r"request 7 may hold \d+ tokens .* more than kv_budget_tokens 20"):
        small.add_request(7, [3] * 12, RequestParams(1, 8))
    assert not small.has_unfinished()
    add_all(engine, work, range(3, N))
    outputs, _ = run_all(engine, {})
    for i in range(3, N):
        assert outputs[i] == expected[i]


def test_kv_budget_preempts_the_newest_and_resumes_it(work, expected):
    budget = max(len(work.prompts[i]) + work.params[i].max_dec_len for i in range(N)) + 2 * 4 + 8
    held = []
    engine = make(work, batch=4, kv_budget_tokens=budget, on_step=lambda state: held.append(engine.held_tokens()))
    add_all(engine, work)
    preempted = []
    outputs, reasons = {}, {}
    while engine.has_unfinished():
        running = set(engine.running_ids())
        for out in engine.step():
            outputs.setdefault(out.request_id, []).extend(out.new_tokens)
            if out.finished:
                reasons[out.request_id] = out.finish_reason
        engine.check_invariants()
        now = set(engine.running_ids()) | set(reasons)
        gone = sorted(running - now)  # left the batch without finishing: preempted
        assert gone == sorted(running)[len(running) - len(gone) :], (gone, running)  # the newest arrivals go first
        preempted += gone
    assert preempted, "the budget never preempted anything"
    assert max(held) <= budget
    for i in range(N):
        assert outputs[i] == expected[i] and reasons[i] in ("end", "length")


def test_resumed_request_continues_its_positions_and_its_draws(work, expected):
    """Preempt every running request after every step: each resumes by recomputing prompt + output."""
    engine = make(work, proposer="suffix", batch=3)
    add_all(engine, work)
    outputs = {}
    while engine.has_unfinished():
        for out in engine.step():
            outputs.setdefault(out.request_id, []).extend(out.new_tokens)
        for i in engine.running_ids():
            engine.preempt(i)
        engine.check_invariants()
    assert {i: outputs[i] for i in range(N)} == {i: expected[i] for i in range(N)}
    cache = engine.proposer.cache
    assert len(cache.active_requests) == 0
    assert len(cache.cached_requests) == N  # finished outputs only: preempted partial ones were not kept


class FlakyModel:
    """Raises on the given calls (1-based), otherwise the wrapped model."""

    def __init__(self, model, failing_calls):
        self.model, self.failing, self.calls = model, set(failing_calls), 0

    def __call__(self, inputs):
        self.calls += 1
        if self.calls in self.failing:
            raise RuntimeError(f"device lost on call {self.calls}")
        return self.model(inputs)


@pytest.mark.parametrize("proposer", ["ngram", "suffix", "mtp_tree"])
def test_a_model_error_advances_nothing_and_the_engine_goes_on(work, expected, proposer):
    from tests.helpers.serving import target_and_head

    base, head = target_and_head(proposer, work.refs)
    engine = make(
        work, proposer=proposer, batch=3, model=FlakyModel(base, failing_calls=[1, 4, 5, 9]), draft_model=head
    )
    add_all(engine, work)
    outputs, failures, given_up = {}, 0, None
    while engine.has_unfinished():
        try:
            outs = engine.step()
        except ModelCallError as error:
            failures += 1
            assert sorted(error.request_ids) == sorted(engine.running_ids())
            assert "device lost" in str(error) and isinstance(error.__cause__, RuntimeError)
            engine.check_invariants()  # nothing committed, every request where it was
            if failures == 3:  # give up on one of them by name: the others are unaffected
                given_up = error.request_ids[0]
                engine.abort(given_up)
            continue
        for out in outs:
            outputs.setdefault(out.request_id, []).extend(out.new_tokens)
            assert (out.finish_reason == "aborted") == (out.request_id == given_up)
        engine.check_invariants()
    assert failures == 4 and given_up is not None
    for i in set(range(N)) - {given_up}:
        assert outputs[i] == expected[i]

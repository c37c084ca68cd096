"""The runner with the adaptive draft-length controller: it changes how many drafts are verified,
never what is emitted; the trace and the measured cost model it feeds."""

from __future__ import annotations

import numpy as np
import pytest

from fastspec.demo.draft_models import ReplayDraftHead, ReplayHiddenStates
from fastspec.demo.models import ReplayModel
from fastspec.demo.workload import continuation_workload, copy_edit_workload
from fastspec.runtime.adaptive.cost_model import MeasuredCost
from fastspec.runtime.adaptive.trace import AcceptanceTrace
from fastspec.runtime.config import SpeculativeConfig
from fastspec.runtime.state import RequestParams
from tests.helpers.runtime_cases import LineCost, generate_workload

STEEP = LineCost(0.02, 0.01)  # a draft costs half a request's share of the step: drafts must earn it


def workload(kind: str = "copy"):
    make = copy_edit_workload if kind == "copy" else continuation_workload
    return make(6, 60, seed=2, corpus="builtin")


def run(work, config, *, batch=3, trace=None, cost_model=None, draft_model=None, wrap=None):
    s = config.sampling
    params = [
        RequestParams(s.seed + i, len(work.references[i]) + 6, s.temperature, s.top_p, s.top_k)
        for i in range(len(work.prompts))
    ]
    model = ReplayModel(work.references, work.tokenizer.vocab_size, end_token=work.tokenizer.END, peak=0.85, seed=1)
    return generate_workload(
        wrap(model) if wrap else model,
        work,
        config,
        batch=batch,
        params=params,
        trace=trace,
        cost_model=cost_model,
        draft_model=draft_model,
    )


def config(method="ngram", strategy="greedy", temperature=0.0, adaptive=None, k=5):
    return SpeculativeConfig.from_dict(
        {
            "method": method,
            "num_speculative_tokens": k if method != "none" else 0,
            "verify_strategy": strategy,
            "anchored": True,
            "max_ngram_size": 5,
            "sampling": {"temperature": temperature, "top_p": 1.0, "seed": 3},
            "adaptive": adaptive or {"enabled": False},
        }
    )


def assert_same(a, b):
    assert len(a.outputs) == len(b.outputs)
    for x, y in zip(a.outputs, b.outputs):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("strategy, temperature", [("greedy", 0.0), ("target_match", 1.0)])
@pytest.mark.parametrize("kind", ["copy", "open"])
def test_adaptive_emits_exactly_what_spec_off_emits(kind, strategy, temperature):
    work = workload(kind)
    off = run(work, config("none", strategy, temperature))
    fixed_trace, adaptive_trace = AcceptanceTrace(), AcceptanceTrace()
    fixed = run(work, config("ngram", strategy, temperature), trace=fixed_trace)
    adaptive = run(
        work, config("ngram", strategy, temperature, adaptive={"enabled": True}), trace=adaptive_trace, cost_model=STEEP
    )
    assert_same(fixed, off)
    assert_same(adaptive, off)
    # the controller did choose: fewer drafts than fixed K, and counts between 0 and K
    offered = [o for s in adaptive_trace.steps for d, o in zip(s.decode, s.offered) if d]
    assert sum(offered) < fixed_trace.summary()["offered"]
    assert 0 in offered and any(0 < o < 5 for o in offered)


def test_adaptive_with_the_measured_cost_is_lossless_and_fits_the_forwards():
    work = workload("copy")
    off = run(work, config("none", "target_match", 1.0))
    cost = MeasuredCost(refit_every=4)
    on = run(
        work,
        config("ngram", "target_match", 1.0, adaptive={"enabled": True, "cost_model": "measured"}),
        cost_model=cost,
    )
    assert_same(on, off)
    assert cost.version > 0 and cost.intercept > 0  # the runner's forwards were timed and fitted


def test_adaptive_with_a_draft_model_is_lossless():
    work = workload("copy")
    off = run(work, config("none"))
    head = ReplayDraftHead(work.references, work.tokenizer.vocab_size, end_token=work.tokenizer.END, peak=0.9)
    trace = AcceptanceTrace()
    on = run(
        work,
        config("mtp", k=3, adaptive={"enabled": True}),
        trace=trace,
        cost_model=STEEP,
        draft_model=head,
        wrap=ReplayHiddenStates,
    )
    assert_same(on, off)
    assert trace.summary()["offered"] > 0


def test_the_trace_agrees_with_the_statistics():
    work = workload("copy")
    trace = AcceptanceTrace()
    result = run(work, config("ngram", "target_match", 1.0, adaptive={"enabled": True}), trace=trace, cost_model=STEEP)
    stats = result.stats
    assert len(trace.steps) == stats.steps
    assert trace.tokens == stats.generated_tokens == sum(len(o) for o in result.outputs)
    assert sum(sum(s.offered) for s in trace.steps) == stats.proposed_tokens
    assert sum(sum(s.accepted) for s in trace.steps) == stats.accepted_tokens
    for s in trace.steps:  # each request keeps its accepted drafts and one token of the target's
        assert all(k == a + 1 or (k == a and k > 0) for a, k in zip(s.accepted, s.kept))
        assert s.rows == len(s.requests) + sum(s.offered)
    # replayed through a curve, the time is the sum of the step costs
    assert trace.simulated_seconds(STEEP) == pytest.approx(sum(0.02 + 0.01 * s.rows for s in trace.steps))


def test_adaptive_off_leaves_draft_token_num_alone():
    work = workload("copy")
    trace = AcceptanceTrace()
    run(work, config("ngram", adaptive={"enabled": False}), trace=trace, cost_model=STEEP)
    # the steep curve is ignored: drafts are offered as the n-gram finds them, up to K
    assert max(o for s in trace.steps for o in s.offered) == 5

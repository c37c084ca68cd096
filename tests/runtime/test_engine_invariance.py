"""A request's output depends on nothing else that happens in the engine: other requests arriving,
being aborted or preempted, its own preemption and resumption, the batch size, the KV budget,
speculation on or off, the proposer, chains or trees. Each request served through ``SpecEngine``
with all of that going on emits, bit for bit, what it emits run alone without speculation
(GREEDY and TARGET_MATCH)."""

from __future__ import annotations

import numpy as np
import pytest

from fastspec.runtime.engine import SpecEngine
from tests.helpers.serving import END, PROPOSERS, alone, config, copy_workload, max_len, serve, target_and_head

STRATEGIES = {"greedy": 0.0, "target_match": 1.0}
CHECKED, DECOYS = 10, 4


@pytest.mark.parametrize("strategy", list(STRATEGIES))
@pytest.mark.parametrize("proposer", list(PROPOSERS))
def test_outputs_equal_each_request_run_alone_without_speculation(proposer, strategy):
    case = list(PROPOSERS).index(proposer) * 2 + list(STRATEGIES).index(strategy)
    rng = np.random.default_rng(100 + case)
    work = copy_workload(CHECKED + DECOYS, seed=case, temperature=STRATEGIES[strategy])
    ids, decoys = range(CHECKED), range(CHECKED, CHECKED + DECOYS)
    length = max_len(work) + int(rng.integers(0, 8))
    batch = int(rng.choice([1, 2, 3, 5, 8, 16, 64]))
    model, head = target_and_head(proposer, work.refs)
    engine = SpecEngine(
        model,
        config(proposer, strategy),
        max_num_seqs=batch,
        max_model_len=length,
        end_tokens=[END],
        kv_budget_tokens=None if case % 3 == 0 else 3 * length,
        draft_model=head,
    )
    served = serve(engine, work, ids, decoys, rng)

    expected = alone(work, ids, length)
    for i in ids:
        assert served.reasons[i] in ("end", "length"), (i, served.reasons[i])
        assert served.streamed[i] == expected[i], f"request {i} (batch {batch}, {proposer}, {strategy})"
        assert len(expected[i]) <= work.params[i].max_dec_len
        assert (served.reasons[i] == "length") == (len(expected[i]) == work.params[i].max_dec_len)
    for d in decoys:
        assert served.reasons[d] in ("aborted", "end", "length")
    assert not engine.has_unfinished() and engine.num_running == 0
    assert len(engine.state.free_slots) == batch
    if batch > 1:
        assert served.max_running > 1  # requests did share steps
    assert served.preemptions > 0 and served.aborts > 0
    if proposer != "none":
        assert engine.stats.proposed_tokens > 0
        assert engine.stats.accepted_tokens > 0  # the drafts were really verified, not all refused


def test_a_static_step_serves_the_same_outputs():
    """The step as two programs built once (what a CUDA-Graph runner replays): serving events change nothing either."""
    rng = np.random.default_rng(7)
    work = copy_workload(CHECKED + DECOYS, seed=7, temperature=1.0)
    ids, decoys = range(CHECKED), range(CHECKED, CHECKED + DECOYS)
    length = max_len(work)
    model, _ = target_and_head("suffix", work.refs)
    engine = SpecEngine(
        model,
        config("suffix", "target_match"),
        max_num_seqs=4,
        max_model_len=length,
        end_tokens=[END],
        kv_budget_tokens=2 * length,
        step_mode="static",
    )
    served = serve(engine, work, ids, decoys, rng)
    expected = alone(work, ids, length)
    assert {i: served.streamed[i] for i in ids} == {i: expected[i] for i in ids}
    assert engine.spec_step.builds == {"prepare": 1, "finish": 1}  # built once, replayed across every event


def test_structured_output_survives_preemption():
    """A constrained request resumed after preemption: its grammar matcher comes back with its output consumed."""
    pytest.importorskip("llguidance")
    pytest.importorskip("tokenizers")
    from fastspec.demo.models import ReplayModel
    from fastspec.runtime.config import SpeculativeConfig
    from fastspec.runtime.generation import generate
    from tests.helpers import structured_cases as sc

    prompts, refs, params = sc.workload(6, ("schema", "object", "regex", None))
    model = ReplayModel(refs, sc.vocab_size(), end_token=sc.END, peak=0.9)
    off = generate(
        model,
        prompts,
        SpeculativeConfig(),
        params=params,
        end_tokens=[sc.END],
        max_num_seqs=1,
        tokenizer=sc.tokenizer(),
    )
    config = SpeculativeConfig.from_dict(
        {"method": "ngram", "num_speculative_tokens": 4, "verify_strategy": "target_match"}
    )
    engine = SpecEngine(
        model,
        config,
        max_num_seqs=3,
        max_model_len=max(map(len, prompts)) + 96,
        end_tokens=[sc.END],
        tokenizer=sc.tokenizer(),
    )
    for i, (prompt, p) in enumerate(zip(prompts, params)):
        engine.add_request(i, prompt, p)
    streamed, steps = {}, 0
    while engine.has_unfinished():
        for out in engine.step():
            streamed.setdefault(out.request_id, []).extend(out.new_tokens)
        if steps % 3 == 2:  # every third step, every running request leaves its slot and comes back
            for i in engine.running_ids():
                engine.preempt(i)
        engine.check_invariants()
        steps += 1
    assert engine.num_preemptions > 0
    for i in range(len(prompts)):
        assert streamed[i] == off.outputs[i].tolist(), f"request {i}"

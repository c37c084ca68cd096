"""Tensor-parallel ranks on Paddle's distributed package (CPU, gloo): 2 and 4 processes, each with its own
state, stepping on all-gathered vocabulary shards, emit the same tokens without broadcasting them, and
the same tokens a single process emits; ``check_ranks_agree`` catches a rank-dependent seed."""

from __future__ import annotations

import json

import pytest

from fastspec.runtime.engine import SpecEngine
from tests.helpers import tp_ranks
from tests.helpers.serving import END, config, copy_workload, max_len, target_and_head

METHODS = {2: "suffix", 4: "mtp"}  # a host-side drafter on 2 ranks, a draft head fed with hidden states on 4


def single_process(method: str) -> dict:
    work = copy_workload(tp_ranks.N_REQUESTS, seed=7, temperature=1.0)
    model, head = target_and_head(method, work.refs)
    engine = SpecEngine(
        model,
        config(method, "target_match"),
        max_num_seqs=4,
        max_model_len=max_len(work),
        end_tokens=[END],
        draft_model=head,
    )
    outputs: dict = {}
    for i in range(tp_ranks.N_REQUESTS):
        engine.add_request(i, work.prompts[i], work.params[i])
    while engine.has_unfinished():
        for out in engine.step():
            outputs.setdefault(str(out.request_id), []).extend(int(t) for t in out.new_tokens)
    return outputs


@pytest.mark.parametrize("world", [2, 4])
def test_ranks_emit_the_same_tokens_and_the_check_catches_a_rank_seed(world, tmp_path):
    dist = pytest.importorskip("paddle.distributed")
    method = METHODS[world]
    dist.spawn(tp_ranks.rank_main, args=(str(tmp_path), method), nprocs=world, backend="gloo")
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(world)]
    assert all(r["world"] == world for r in ranks)

    same = [r["same_seed"] for r in ranks]
    assert all(s["diverged_at"] is None for s in same), [s.get("error") for s in same]
    assert all(s["outputs"] == same[0]["outputs"] for s in same)
    assert len(same[0]["outputs"]) == tp_ranks.N_REQUESTS
    assert same[0]["outputs"] == single_process(method)  # and what one process emits

    bad = [r["rank_seed"] for r in ranks]
    steps = {b["diverged_at"] for b in bad}
    assert len(steps) == 1 and None not in steps, steps  # every rank stops at the same step
    assert all("emitted other tokens than rank 0" in b["error"] for b in bad)

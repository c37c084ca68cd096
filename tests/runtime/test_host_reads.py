"""The host waits for the device at most once a step: ``generate`` reads device memory on the host
(``Tensor.numpy``, ``item``, ``tolist``, ``bool``, ``int``, ``float``, ...) at most once per step, for
every proposer and step mode, and its outputs stay those of the run without speculation."""

from __future__ import annotations

import numpy as np
import paddle
import pytest

from fastspec.demo.models import ReplayModel
from fastspec.runtime.config import SpeculativeConfig
from fastspec.runtime.generation import generate
from fastspec.runtime.state import RequestParams
from tests.helpers.host_reads import counted_reads
from tests.helpers.runtime_cases import REPLAY_AUX_IDS, copy_task, generate_replay

V, K, SLOTS = 64, 3, 2


def test_the_counter_sees_every_kind_of_read():
    x = paddle.to_tensor(3, dtype="int64")
    with counted_reads() as reads:
        x.numpy()
        int(x)
        float(x)
        bool(x)
        x.item()
        x.tolist()
        np.asarray(x)
        x.sum() + 1  # device ops: no read
    assert reads[0] == 7


def workload():
    prompts, refs = copy_task(6, length=48, seed=3)
    params = [RequestParams(seed=5 + i, max_dec_len=10 + 4 * i, temperature=1.0, top_p=0.9) for i in range(6)]
    return prompts, refs, params


def run(method, step_mode, counter=None, strategy="target_match", **changes):
    prompts, refs, params = workload()
    config = SpeculativeConfig.from_dict(
        {
            "method": {"hybrid": "mtp", "anchored": "ngram"}.get(method, method),
            "num_speculative_tokens": 0 if method == "naive" else K,
            "verify_strategy": strategy,
            "num_model_steps": 1 if method == "hybrid" else 0,
            "aux_layer_ids": list(REPLAY_AUX_IDS),
            "anchored": method == "anchored",
            **changes,
        }
    )
    per_step = []
    progress = None
    if counter is not None:
        last = [0]

        def progress(*_):
            per_step.append(counter[0] - last[0])
            last[0] = counter[0]

    result = generate_replay(
        method, prompts, refs, config, slots=SLOTS, params=params, step_mode=step_mode, progress=progress
    )
    return result, per_step


CASES = [
    ("naive", "eager"),
    ("naive", "static"),
    ("ngram", "eager"),
    ("ngram", "static"),
    ("anchored", "eager"),
    ("anchored", "static"),
    ("suffix", "eager"),
    ("suffix", "static"),
    ("mtp", "eager"),
    ("mtp", "static"),
    ("hybrid", "eager"),
    ("eagle3", "eager"),
    ("eagle3", "static"),
]


@pytest.mark.parametrize("method, step_mode", CASES, ids=[f"{m}-{s}" for m, s in CASES])
@pytest.mark.slow
def test_at_most_one_host_read_per_step(method, step_mode):
    run(method, step_mode)  # warm: a static program's build happens outside the count
    with counted_reads() as reads:
        result, per_step = run(method, step_mode, reads)
    assert len(per_step) == result.stats.steps > 10
    assert max(per_step) <= 1, f"reads per step: {per_step}"
    off, _ = run("naive", "eager")
    for a, b in zip(off.outputs, result.outputs):  # speculation changes nothing a request produces
        np.testing.assert_array_equal(a, b)


def test_suffix_with_anchored_ngram_and_adaptive_read_once_per_step():
    with counted_reads() as reads:
        result, per_step = run(
            "suffix",
            "eager",
            reads,
            suffix={"with_anchored_ngram": True},
            adaptive={"enabled": True, "cost_model": "roofline", "launch_us": 0.0},
        )
    assert max(per_step) <= 1, f"reads per step: {per_step}"
    off, _ = run("naive", "eager")
    for a, b in zip(off.outputs, result.outputs):
        np.testing.assert_array_equal(a, b)
    assert result.stats.accepted_tokens > 0


def test_outputs_from_the_statuses_equal_the_state_history():
    """The outputs ``generate`` collects from each step's status equal what the state holds on the device."""
    prompts, refs, params = workload()
    seen = {}

    def on_step(state):  # before finished requests leave: the device's history of each slot
        for slot, request in enumerate(state.request_of_slot):
            if request is not None:
                seen[request] = (state.output(slot), state.host.output(slot))

    config = SpeculativeConfig.from_dict({"method": "ngram", "num_speculative_tokens": K})
    result = generate(
        ReplayModel(refs, V, end_token=0),
        prompts,
        config,
        max_num_seqs=SLOTS,
        end_tokens=[0],
        params=params,
        on_step=on_step,
    )
    for request, (device, host) in seen.items():
        np.testing.assert_array_equal(host, device)
        np.testing.assert_array_equal(result.outputs[request], device)

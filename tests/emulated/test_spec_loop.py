"""The whole speculative loop on the emulated XPU and the emulated CUDA device: propose
(ngram_match) -> targets (sample_tokens or top_p_candidates) -> verify_draft_tokens ->
update_model_status, 50 steps, run once on the device's kernels and once on the CPU kernels
(fastspec.arrays, numpy state): the state must stay identical after every step, the launch changing
from step to step. The loop itself is tests/ops/test_spec_loop.py's."""

from __future__ import annotations

import numpy as np
import pytest

from fastspec import arrays
from tests.helpers.devices import DEVICES, EmulatedDevice
from tests.ops.test_spec_loop import (
    COMPARED,
    NGRAM_NAMES,
    STEPS,
    UPDATE_NAMES,
    K,
    draw_targets,
    initial_state,
    markov_table,
    step_once,
    verify_inputs,
)


class KernelLoop:
    """The loop's state as numpy arrays, advanced in place by fastspec.arrays with `options`
    (the CPU kernels for {}, an emulated device otherwise)."""

    def __init__(self, state: dict[str, np.ndarray], options: dict):
        self.s = {name: value.copy() for name, value in state.items()}
        self.options = options

    def get(self, name: str) -> np.ndarray:
        return self.s[name].copy()

    def set(self, name: str, value: np.ndarray) -> None:
        self.s[name] = np.ascontiguousarray(value).copy()

    def propose(self) -> None:
        arrays.ngram_match(*(self.s[n] for n in NGRAM_NAMES), max_ngram_size=3, **self.options)

    def targets(self, strategy, probs, batch_ids, cu) -> dict:
        return draw_targets(arrays, self.s, strategy, probs, batch_ids, cu, **self.options)

    def verify(self, strategy, rows: dict, cu) -> None:
        arrays.verify_draft_tokens(*verify_inputs(self.s, rows, cu), strategy=strategy, **self.options)

    def update(self) -> bool:
        status = arrays.update_model_status(*(self.s[n] for n in UPDATE_NAMES), **self.options)
        return bool(status.has_running[0])


@pytest.mark.parametrize("device", DEVICES, ids=str)
@pytest.mark.parametrize("strategy", ["greedy", "target_match", "topp"])
@pytest.mark.slow
def test_fifty_steps_equal_the_cpu_loop(device: EmulatedDevice, strategy: str) -> None:
    """STEPS propose / sample / verify / update steps on an emulated device, the launch options
    changing from step to step, equal the CPU loop's tensors after every step."""
    rng = np.random.default_rng(2024)
    table = markov_table(rng)
    state = initial_state(rng, table)
    if strategy == "greedy":
        state["top_k"][:] = 1
    cpu = KernelLoop(state, {})
    accepted = 0
    for step in range(STEPS):
        options = device.launch(step)
        emulated = KernelLoop({name: cpu.get(name) for name in cpu.s}, options)
        running_cpu = step_once(cpu, strategy, table, step, state)
        running_device = step_once(emulated, strategy, table, step, state)
        for name in COMPARED:
            np.testing.assert_array_equal(
                emulated.get(name), cpu.get(name), err_msg=f"{name} at step {step} {device.describe(options)}"
            )
        assert running_device == running_cpu
        accepted += int(np.maximum(cpu.get("accept_num") - 1, 0).sum())
    assert accepted > 20 and K > 1  # drafts were accepted: the loop exercised the verify path

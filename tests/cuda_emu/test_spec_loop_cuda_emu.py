"""The whole speculative loop on the emulated CUDA device: propose (ngram_match) -> targets
(sample_tokens or top_p_candidates) -> verify_draft_tokens -> update_model_status, 50 steps, run
once on the emulated CUDA kernels and once on the CPU kernels: the state must stay identical after
every step. The loop is tests/ops/test_spec_loop.py's, its driver the XPU emulator test's."""

from __future__ import annotations

import numpy as np
import pytest

from tests.cuda_emu.launches import LAUNCHES, describe
from tests.ops.test_spec_loop import COMPARED, K, STEPS, initial_state, markov_table, step_once
from tests.xpu.test_spec_loop_xpu import KernelLoop


@pytest.mark.parametrize("strategy", ["greedy", "target_match", "topp"])
def test_fifty_steps_on_the_emulated_gpu_equal_the_cpu_loop(strategy):
    rng = np.random.default_rng(2024)
    table = markov_table(rng)
    state = initial_state(rng, table)
    if strategy == "greedy":
        state["top_k"][:] = 1
    cpu = KernelLoop(state, {})
    accepted = 0
    for step in range(STEPS):
        options = LAUNCHES[step % len(LAUNCHES)]  # the block order changes from step to step
        gpu = KernelLoop({name: cpu.get(name) for name in cpu.s}, options)
        running_cpu = step_once(cpu, strategy, table, step, state)
        running_gpu = step_once(gpu, strategy, table, step, state)
        for name in COMPARED:
            np.testing.assert_array_equal(gpu.get(name), cpu.get(name), err_msg=f"{name} at step {step} {describe(options)}")
        assert running_gpu == running_cpu
        accepted += int(np.maximum(cpu.get("accept_num") - 1, 0).sum())
    assert accepted > 20 and K > 1  # drafts were accepted: the loop exercised the verify path

"""The whole speculative loop on the emulated CUDA device: propose (ngram_match) -> targets
(sample_tokens or top_p_candidates) -> verify_draft_tokens -> update_model_status, 50 steps, run
once on the emulated CUDA kernels and once on the CPU kernels: the state must stay identical after
every step. The loop is tests/ops/test_spec_loop.py's, its driver the XPU emulator test's."""

from __future__ import annotations

import pytest

from tests.cuda_emu.launches import LAUNCHES, describe
from tests.xpu.test_spec_loop_xpu import assert_the_loop_equals_the_cpu_loop


@pytest.mark.parametrize("strategy", ["greedy", "target_match", "topp"])
def test_fifty_steps_on_the_emulated_gpu_equal_the_cpu_loop(strategy):
    assert_the_loop_equals_the_cpu_loop(strategy, LAUNCHES, describe)  # the block order changes from step to step

#!/usr/bin/env python3
"""What the adaptive draft-length controller adds to a step, on CPU.

    python -m bench.bench_adaptive_controller

Times ``plan`` (before the proposer) and ``observe`` (after the state update) of
``fastspec.runtime.adaptive.controller.DraftLengthController`` on a state of B decoding slots, K = 5, with random
rows and accept counts: one fastspec op call each (``adaptive_plan``, ``adaptive_observe``) on this
machine's CPU, median of single calls after warm-up, at B = 1, 64 and 256. Writes
bench/results/adaptive_controller.json. The step's target (within two raw custom-op calls)
is judged by ``bench/bench_call_overhead.py``, which times the step interleaved with raw calls, so
that the machine's load falls on both alike; single calls here move with that load.
"""

from __future__ import annotations

import sys

import numpy as np

from bench.common import fmt_time, median_seconds, report_batches
from fastspec.cli.errors import ArgumentParser, user_errors

K = 5
BATCHES = (1, 64, 256)


def build(batch: int):
    """A state of ``batch`` decode slots and a controller over it (roofline cost)."""
    import paddle

    from fastspec.runtime.adaptive.controller import DraftLengthController
    from fastspec.runtime.adaptive.cost_model import RooflineCost
    from fastspec.runtime.state import SpecState

    paddle.set_device("cpu")
    rng = np.random.default_rng(0)
    state = SpecState(batch, 64, K, [0], "cpu")
    rows = rng.integers(1, K + 2, batch)
    state.cu_seqlens_q_output[:] = paddle.to_tensor(np.concatenate([[0], np.cumsum(rows)]).astype(np.int32))
    state.accept_num[:] = paddle.to_tensor(rng.integers(1, rows + 1).astype(np.int32))
    controller = DraftLengthController(batch, K, RooflineCost.named("llama-3.1-8b", "h100-sxm"))
    controller.acceptance[:, 0] = 1.0  # every slot decoding
    return state, controller


@user_errors()
def main(argv=None) -> int:
    ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args(argv)  # --help; no options

    def measure(batch: int) -> dict:
        state, controller = build(batch)
        parts = {"plan": lambda: controller.plan(state), "observe": lambda: controller.observe(state)}
        times = {name: median_seconds(fn, repeat=400, warmup=20, budget_s=3.0) for name, fn in parts.items()}
        return {"batch": batch, "k": K, **{f"{n}_s": t for n, t in times.items()}, "per_step_s": sum(times.values())}

    def line(r: dict) -> str:
        return (
            f"B={r['batch']:<4} K={K}: plan {fmt_time(r['plan_s'])}  observe {fmt_time(r['observe_s'])}  "
            f"per step {fmt_time(r['per_step_s'])}"
        )

    return report_batches("adaptive_controller", BATCHES, measure, line)


if __name__ == "__main__":
    sys.exit(main())

"""A few cells of bench/bench_adaptive.py's grid, small: adaptive never below spec off, near the best
fixed K, lossless. The whole grid runs in the benchmark, not here (docs/performance.md)."""

from __future__ import annotations

import numpy as np
import pytest

from bench.bench_adaptive import WORKLOADS, policy_config, run
from fastspec.runtime.adaptive.cost_model import RooflineCost
from fastspec.runtime.config import SpeculativeConfig
from bench.bench_adaptive import BASE_CONFIG

BATCH, REQUESTS, CHUNK = 12, 24, 40
# memory-bound (A100, Llama 3.1 8B: flat up to 153 tokens per step), and compute-bound from
# 8 tokens on (a tenth of the A100's FLOP/s): there a draft costs as much as a decode token
COSTS = {
    "memory-bound": RooflineCost.named("llama-3.1-8b", "a100-sxm", 20.0),
    "compute-bound": RooflineCost(8.03e9, 16.06e9, 2.039e12, 31.2e12, 20e-6),
}


def rate(result, cost) -> float:
    return result.tokens / float(np.sum(cost.seconds(result.rows)))


@pytest.mark.parametrize("workload", ["copy", "mixed"])
def test_adaptive_is_never_below_spec_off_and_near_the_best_fixed_k(workload):
    base = SpeculativeConfig.from_yaml(str(BASE_CONFIG))
    work = WORKLOADS[workload](REQUESTS, CHUNK, seed=0, corpus="builtin")
    fixed = {p: run(work, policy_config(base, p), BATCH) for p in ("off", "k1", "k5")}
    for name, cost in COSTS.items():
        adaptive = run(work, policy_config(base, "adaptive"), BATCH, cost)
        for other in fixed.values():
            for a, b in zip(adaptive.outputs, other.outputs):
                np.testing.assert_array_equal(a, b)
        off, best = rate(fixed["off"], cost), max(rate(r, cost) for r in fixed.values())
        assert rate(adaptive, cost) >= off, name
        assert rate(adaptive, cost) >= 0.97 * best, name
        if name == "compute-bound":  # nothing is free: it drafts (almost) nothing rather than probe at a loss
            assert adaptive.summary["offered_per_request_step"] < 0.1

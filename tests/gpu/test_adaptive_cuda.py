"""adaptive_plan and adaptive_observe on CUDA: bit-exact against the reference (random, wild and
the controller's B = 256, K = 5), and a plan + observe step captured in a CUDA Graph and replayed.

Needs a real GPU throughout (`needs_gpu`): on the CUDA emulator the same kernels are held to the
reference by tests/emulated/test_adaptive.py."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")  # the whole module needs PyTorch
pytestmark = pytest.mark.needs_gpu

import numpy as np

import fastspec.arrays
from tests.helpers import adaptive_cases as cases
from tests.helpers.cuda import capture, to_device

OPS = ("adaptive_plan", "adaptive_observe")


def run_cuda(op: str, arrays: dict, attrs: dict) -> list[np.ndarray]:
    tensors = to_device(arrays)
    getattr(fastspec.arrays, op)(*(tensors[name] for name in cases.names(op)), **attrs)
    torch.cuda.synchronize()
    return [tensors[name].cpu().numpy() for name in cases.outputs(op)]


@pytest.mark.parametrize("op", OPS)
def test_random_calls_match_the_reference(op):
    for i, (arrays, attrs) in enumerate(
        cases.cases(op, seed=41, count=120)
        + cases.cases(op, seed=42, count=4, b=256, k=5)
        + cases.cases(op, seed=43, count=2, b=4096, k=5)
    ):
        cases.assert_bit_equal(op, run_cuda(op, arrays, attrs), cases.run_reference(op, arrays, attrs), f"case {i}")


def test_a_captured_step_replays_like_the_reference():
    ((plan, plan_attrs),) = cases.cases("adaptive_plan", seed=44, count=1, b=64, k=5)
    ((observe, _),) = cases.cases("adaptive_observe", seed=44, count=1, b=64, k=5)
    observe.update(acceptance=plan["acceptance"], found=plan["found"], rates=plan["rates"])
    host = {**plan, **observe}
    device = to_device(host)

    def step() -> None:
        fastspec.arrays.adaptive_plan(*(device[name] for name in cases.PLAN_NAMES), **plan_attrs)
        fastspec.arrays.adaptive_observe(*(device[name] for name in cases.OBSERVE_NAMES))

    fresh = {name: value.clone() for name, value in device.items()}
    graph = capture(step)  # runs the step twice (warm-up and capture): start again from fresh values
    for name, value in fresh.items():
        device[name].copy_(value)
    for _ in range(3):
        graph.replay()
        planned = cases.run_reference("adaptive_plan", {n: host[n] for n in cases.PLAN_NAMES}, plan_attrs)
        host.update(zip(cases.outputs("adaptive_plan"), planned))
        observed = cases.run_reference("adaptive_observe", {n: host[n] for n in cases.OBSERVE_NAMES}, {})
        host.update(zip(cases.outputs("adaptive_observe"), observed))
    torch.cuda.synchronize()
    for name in (*cases.outputs("adaptive_plan"), *cases.outputs("adaptive_observe")):
        np.testing.assert_array_equal(device[name].cpu().numpy(), host[name], err_msg=name)

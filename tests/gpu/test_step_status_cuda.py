"""CUDA step_status against the numpy reference on random calls and a large batch.

Runs the kernel through the pybind11 bindings on PyTorch tensors (no Paddle on the GPU host); on the CUDA
emulator without a GPU."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")  # the whole module needs PyTorch

import numpy as np

from tests.helpers import step_status_cases as cases
from tests.helpers.cuda import run_op, target


def run_cuda(arrays: dict) -> dict[str, np.ndarray]:
    return {"status": run_op("step_status", arrays, cases.NAMES).cpu().numpy()}


def test_random_calls_match_the_reference():
    for i, (arrays, attrs) in enumerate(cases.cases(seed=71, count=target.cases(400))):
        cases.assert_equal(run_cuda(arrays), cases.run_reference(arrays, attrs), f"case {i}")


def test_a_large_batch():
    arrays, attrs = cases.case(np.random.default_rng(8), batch=4096, k=5)
    cases.assert_equal(run_cuda(arrays), cases.run_reference(arrays, attrs))

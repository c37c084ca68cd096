"""CUDA pack_rows against the numpy reference on random calls and a batch larger than its block.

Runs the kernel through the pybind11 bindings on PyTorch tensors (no Paddle on the GPU host); on the CUDA
emulator without a GPU."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")  # the whole module needs PyTorch

import numpy as np

import fastspec.arrays
from tests.helpers import pack_rows_cases as cases
from tests.helpers.cuda import target, tensor


def run_cuda(arrays: dict) -> dict[str, np.ndarray]:
    t = {n: None if v is None else tensor(v) for n, v in arrays.items()}
    result = fastspec.arrays.pack_rows(*(t[n] for n in cases.NAMES), **target.kw)
    target.synchronize()
    return {n: t[n].cpu().numpy() for n in cases.OUTPUTS[:-1]} | {"step_record": result.step_record.cpu().numpy()}


def test_random_calls_match_the_reference():
    for i, (arrays, attrs) in enumerate(cases.cases(seed=31, count=target.cases(400))):
        cases.assert_equal(run_cuda(arrays), cases.run_reference(arrays, attrs), f"case {i}")


def test_a_large_batch():
    arrays, attrs = cases.case(np.random.default_rng(4), batch=1000, k=3, proposal=True)
    arrays["batch_id_per_token_output"] = np.zeros(4000, np.int32)
    cases.assert_equal(run_cuda(arrays), cases.run_reference(arrays, attrs))

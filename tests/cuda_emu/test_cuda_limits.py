"""The emulated CUDA backend's own refusals: a batch over the kernels' launch limit gets the CPU
backend's error, and the emulator's options are checked by name."""

from __future__ import annotations

import numpy as np
import pytest

from fastspec import arrays
from tests.helpers import ngram_harness as harness
from tests.helpers.devices import CUDA
from tests.helpers.ngram_cases import random_case


def test_batch_above_the_cuda_limit_is_the_cpu_backends_error():
    named, attrs = random_case(np.random.default_rng(0), batch=4097, max_model_len=8)
    with pytest.raises(ValueError, match="batch") as emulated:
        harness.run_with("ngram_match", named, attrs, CUDA.launches[0])
    assert "ngram_match" in str(emulated.value)


def test_unknown_orders_and_backends_are_refused():
    probs = np.full((1, 4), 0.25, np.float32)
    top_p, batch_id = np.array([0.5], np.float32), np.zeros(1, np.int32)
    with pytest.raises(ValueError, match="cuda_block_order"):
        arrays.top_p_candidates(
            probs, top_p, batch_id, max_candidate_len=2, backend="cuda_emulator", cuda_block_order="backwards"
        )
    with pytest.raises(ValueError, match="backend"):
        arrays.top_p_candidates(probs, top_p, batch_id, max_candidate_len=2, backend="cuda")


def test_cpu_torch_tensors_run_on_the_emulator_and_device_tensors_are_refused():
    """tests/gpu hands the emulator CPU torch tensors; a tensor elsewhere is named and refused."""
    torch = pytest.importorskip("torch")
    probs = np.array([[0.1, 0.5, 0.2, 0.2], [0.25, 0.25, 0.25, 0.25]], np.float32)
    top_p, batch_id = np.array([0.6, 1.0], np.float32), np.array([0, 1], np.int32)
    host = arrays.top_p_candidates(probs, top_p, batch_id, max_candidate_len=3, backend="cuda_emulator")
    tensors = arrays.top_p_candidates(
        *(torch.from_numpy(a) for a in (probs, top_p, batch_id)),
        max_candidate_len=3,
        backend="cuda_emulator",
        cuda_block_order="reverse",
    )
    for got, want in zip(tensors, host):
        assert isinstance(got, torch.Tensor) and np.array_equal(got.numpy(), want)
    with pytest.raises(ValueError, match="runs on numpy arrays \\(or CPU torch tensors\\).*'top_p' is a torch"):
        arrays.top_p_candidates(
            torch.from_numpy(probs),
            torch.from_numpy(top_p).to("meta"),
            torch.from_numpy(batch_id),
            max_candidate_len=3,
            backend="cuda_emulator",
        )

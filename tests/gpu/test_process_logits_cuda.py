"""process_logits on CUDA: bit-exact against the reference (random and wild calls, chains and
trees, a real vocabulary with long histories), and captured in a CUDA Graph, replayed on new
histories, drafts and parameters of the same shapes.

Needs a real GPU throughout (`needs_gpu`): on the CUDA emulator the same kernel is held to the
reference by tests/emulated/test_process_logits.py."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")  # the whole module needs PyTorch
pytestmark = pytest.mark.needs_gpu

import numpy as np

import fastspec.arrays
from tests.helpers import logits_cases as cases
from tests.helpers.cuda import replay_on_new_inputs, shaped_like, to_device


def run_cuda(arrays: dict) -> np.ndarray:
    tensors = to_device(arrays)
    fastspec.arrays.process_logits(*(tensors[name] for name in cases.NAMES))
    torch.cuda.synchronize()
    return tensors["logits"].cpu().numpy()


def test_random_calls_match_the_reference():
    for i, arrays in enumerate(cases.cases(seed=61, count=200)):
        cases.assert_bit_equal(run_cuda(arrays), cases.run_reference(arrays), f"case {i}")


@pytest.mark.parametrize("tree", [False, True])
def test_a_real_vocabulary_and_long_histories_match_the_reference(tree):
    rng = np.random.default_rng(62 + tree)
    arrays = cases.case(rng, b=8, k=5, vocab=151936, max_len=6000, tree=tree)
    arrays["token_ids_all"] = rng.integers(0, 3000, arrays["token_ids_all"].shape)
    arrays["prompt_lens"] = rng.integers(0, 4000, 8)
    arrays["step_idx"] = rng.integers(0, 2000, 8)
    arrays["repetition_penalty"][:] = 1.2
    cases.assert_bit_equal(run_cuda(arrays), cases.run_reference(arrays))


def test_a_captured_call_replays_on_new_inputs():
    rng = np.random.default_rng(63)
    shape = dict(b=6, k=4, vocab=500, max_len=80, tree=True)
    first = cases.case(rng, **shape)
    tensors = to_device(first)

    def step() -> None:
        fastspec.arrays.process_logits(*(tensors[name] for name in cases.NAMES))

    new = [shaped_like(cases.case(rng, **shape), first) for _ in range(4)]  # new contents, the captured shapes

    def check(arrays: dict, out: dict, index: int) -> None:
        cases.assert_bit_equal(out["logits"], cases.run_reference(arrays), f"replay {index}")

    replay_on_new_inputs(step, tensors, new, check)

"""process_logits on the emulated XPU and the emulated CUDA device: bit-exact against the reference
on random and wild calls (chains and trees) in every launch, and on histories longer than a CUDA
tile and an XPU chunk."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import logits_cases as cases
from tests.helpers.devices import DEVICES, check_random_calls

pytestmark = pytest.mark.parametrize("device", DEVICES, ids=str)  # every test runs on both devices


def test_random_calls_match_the_reference(device):
    check_random_calls(
        device,
        [(arrays,) for arrays in cases.cases(seed=23, count=60)],
        cases.run_arrays,
        cases.run_reference,
        cases.assert_bit_equal,
    )


@pytest.mark.parametrize("tree", [False, True])
def test_long_histories_match_the_reference(device, tree):
    rng = np.random.default_rng(5 + tree)
    arrays = cases.case(rng, b=2, k=4, vocab=3000, max_len=1500, tree=tree)
    arrays["token_ids_all"] = rng.integers(0, 700, arrays["token_ids_all"].shape)  # repeats across tiles
    arrays["prompt_lens"] = np.array([700, 100], np.int64)
    arrays["step_idx"] = np.array([790, 1300], np.int64)
    arrays["repetition_penalty"][:] = 1.25
    arrays["frequency_penalty"][:] = 0.5
    options = device.launch(device.wide[0])
    cases.assert_bit_equal(cases.run_arrays(arrays, **options), cases.run_reference(arrays), device.describe(options))

"""verify_draft_tokens (TOPP, GREEDY, TARGET_MATCH, REJECTION) and update_model_status on the
emulated CUDA device: bit-exact against the references on the CPU tests' random batches (same
seeds), in every block order, with batches of many blocks. The helpers are the XPU emulator tests'."""

from __future__ import annotations

import numpy as np
import pytest

from fastspec import reference as ref
from tests.helpers.sampling_cases import to_bf16_bits
from tests import rejection_cases
from tests.cuda_emu.launches import describe, launch
from tests.verify_update_cases import STRATEGIES, UPDATE_NAMES, UPDATE_OUTPUTS, VERIFY_NAMES, random_update_case, random_verify_case
from tests.xpu.test_verify_update_xpu import (assert_all_equal, check_empty_batch_writes_has_running, check_large_batch,
                                             check_rejection_random_batches,
                                             check_update_random_batches)
from tests.xpu.test_verify_update_xpu import rejection_xpu as rejection
from tests.xpu.test_verify_update_xpu import update_xpu as update
from tests.xpu.test_verify_update_xpu import verify_xpu as verify


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_verify_random_batches_match_the_reference(strategy):
    rng = np.random.default_rng(100 * STRATEGIES.index(strategy))  # the CPU tests' first chunk
    for case in range(300):
        arrays, attrs = random_verify_case(rng, strategy=strategy)
        options = launch(case)
        expected = ref.verify_draft_tokens(*(arrays[name] for name in VERIFY_NAMES), **attrs)
        assert_all_equal(("accept_tokens", "accept_num"), verify(arrays, attrs, options), expected,
                         f"case {case} {attrs} {describe(options)}")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_rejection_random_batches_match_the_reference(dtype):
    check_rejection_random_batches(rejection, launch, describe, dtype, cases=150)


def test_update_random_batches_match_the_reference():
    check_update_random_batches(update, launch, describe, cases=400)


@pytest.mark.parametrize("batch", [1, 300, 4096])
def test_large_batches_match_the_reference(batch):
    """Verify: one thread per slot, many blocks; update: one block of up to 1024 threads striding."""
    check_large_batch(verify, update, launch, batch)


def test_empty_batch_writes_has_running():
    check_empty_batch_writes_has_running(update, launch)

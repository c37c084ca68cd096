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
from tests.xpu.test_verify_update_xpu import assert_all_equal
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
    rng = np.random.default_rng({"float32": 1, "float16": 2, "bfloat16": 3}[dtype])
    for case in range(150):
        arrays = rejection_cases.random_case(rng)
        for name in ("target_probs", "draft_probs"):
            p = arrays[name]
            arrays[name] = p if dtype == "float32" else p.astype(np.float16) if dtype == "float16" else to_bf16_bits(p)
        roll = rng.random()
        attrs = {"accept_all": True} if roll < 0.1 else {"reject_all": True} if roll < 0.2 else {}
        options = launch(case)
        expected = ref.verify_rejection(*(arrays[name] for name in rejection_cases.ARRAY_NAMES), **attrs)
        assert_all_equal(("accept_tokens", "accept_num"), rejection(arrays, attrs, options), expected,
                         f"{dtype} case {case} {attrs} {describe(options)}")


def test_update_random_batches_match_the_reference():
    rng = np.random.default_rng(500)
    for case in range(400):
        arrays = random_update_case(rng)
        options = launch(case)
        expected = ref.update_model_status(*(arrays[name] for name in UPDATE_NAMES))
        assert_all_equal((*UPDATE_OUTPUTS, "has_running"), update(arrays, options), expected,
                         f"case {case} {describe(options)}")


@pytest.mark.parametrize("batch", [1, 300, 4096])
def test_large_batches_match_the_reference(batch):
    """Verify: one thread per slot, many blocks; update: one block of up to 1024 threads striding."""
    rng = np.random.default_rng(batch)
    for n, strategy in enumerate(STRATEGIES):
        arrays, attrs = random_verify_case(rng, strategy=strategy, batch=batch, k=5)
        expected = ref.verify_draft_tokens(*(arrays[name] for name in VERIFY_NAMES), **attrs)
        assert_all_equal(("accept_tokens", "accept_num"), verify(arrays, attrs, launch(n)), expected, strategy)
    arrays = random_update_case(rng, batch=batch, k=5, max_model_len=64)
    expected = ref.update_model_status(*(arrays[name] for name in UPDATE_NAMES))
    assert_all_equal((*UPDATE_OUTPUTS, "has_running"), update(arrays, launch(batch)), expected)


def test_empty_batch_writes_has_running():
    arrays = random_update_case(np.random.default_rng(3), batch=1)
    empty = {name: value[:0] if name not in ("end_tokens",) else value for name, value in arrays.items()}
    assert update(empty, launch(0))[-1].tolist() == [False]

"""verify_draft_tokens (TOPP, GREEDY, TARGET_MATCH, REJECTION) and update_model_status on the
emulated XPU: bit-exact against the references on the CPU tests' random batches (same seeds), on
every grid, clusters forward and reversed."""

from __future__ import annotations

import numpy as np
import pytest

from fastspec import arrays as kernels
from fastspec import reference as ref
from fastspec.core.errors import FastspecArgumentError
from tests.helpers.sampling_cases import to_bf16_bits
from tests import rejection_cases
from tests.verify_update_cases import (
    STRATEGIES,
    UPDATE_NAMES,
    UPDATE_OUTPUTS,
    VERIFY_NAMES,
    random_update_case,
    random_verify_case,
)
from tests.xpu.launches import describe, launch


def copies(arrays: dict) -> dict:
    return {name: None if value is None else np.ascontiguousarray(value).copy() for name, value in arrays.items()}


def verify_xpu(arrays: dict, attrs: dict, options: dict) -> tuple[np.ndarray, np.ndarray]:
    c = copies(arrays)
    kernels.verify_draft_tokens(*(c[name] for name in VERIFY_NAMES), **attrs, **options)
    return c["accept_tokens"], c["accept_num"]


def update_xpu(arrays: dict, options: dict) -> list[np.ndarray]:
    c = copies(arrays)
    has_running = np.ones(1, np.bool_)  # overwritten, even for an empty batch
    kernels.update_model_status(*(c[name] for name in UPDATE_NAMES), has_running, **options)
    return [c[name] for name in UPDATE_OUTPUTS] + [has_running]


def assert_all_equal(names, actual, expected, context=""):
    for name, a, e in zip(names, actual, expected):
        np.testing.assert_array_equal(a, e, err_msg=f"{name} {context}")


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_verify_random_batches_match_the_reference(strategy):
    rng = np.random.default_rng(100 * STRATEGIES.index(strategy))  # the CPU tests' first chunk
    for case in range(400):
        arrays, attrs = random_verify_case(rng, strategy=strategy)
        options = launch(case)
        expected = ref.verify_draft_tokens(*(arrays[name] for name in VERIFY_NAMES), **attrs)
        assert_all_equal(("accept_tokens", "accept_num"), verify_xpu(arrays, attrs, options), expected,
                         f"case {case} {attrs} {describe(options)}")


def rejection_xpu(arrays: dict, attrs: dict, options: dict) -> tuple[np.ndarray, np.ndarray]:
    c = copies(arrays)
    positional = [c["accept_tokens"], c["accept_num"], c["draft_tokens"], None, None, None, None,
                  *(c[name] for name in ("seed", "step_idx", "stop_flags", "is_block_step", "seq_lens_encoder",
                                         "seq_lens_this_time", "cu_seqlens_q_output", "reasoning_status",
                                         "max_dec_len", "end_tokens"))]
    kernels.verify_draft_tokens(*positional, strategy="rejection", target_probs=c["target_probs"],
                                draft_probs=c["draft_probs"], **attrs, **options)
    return c["accept_tokens"], c["accept_num"]


def check_rejection_random_batches(rejection, launch, describe, dtype: str, cases: int) -> None:
    """REJECTION on an emulated device (``rejection(arrays, attrs, options)``) equals the reference
    on random batches whose probabilities are ``dtype``."""
    rng = np.random.default_rng({"float32": 1, "float16": 2, "bfloat16": 3}[dtype])
    for case in range(cases):
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


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_rejection_random_batches_match_the_reference(dtype):
    check_rejection_random_batches(rejection_xpu, launch, describe, dtype, cases=200)


def test_rejection_large_vocabulary():
    """One core scans 151936 probabilities per draw, through its tiles."""
    rng = np.random.default_rng(11)
    arrays = rejection_cases.random_case(rng, batch=4)
    rows = arrays["target_probs"].shape[0]
    arrays["target_probs"] = rejection_cases.random_rows(rng, rows, 151936, zero_fraction=0.5)
    arrays["draft_probs"] = rejection_cases.random_rows(rng, rows, 151936, zero_fraction=0.5)
    expected = ref.verify_rejection(*(arrays[name] for name in rejection_cases.ARRAY_NAMES))
    assert_all_equal(("accept_tokens", "accept_num"), rejection_xpu(arrays, {}, launch(1)), expected)


def check_update_random_batches(update, launch, describe, cases: int) -> None:
    """``update(arrays, options)`` on an emulated device equals the reference on random batches."""
    rng = np.random.default_rng(500)
    for case in range(cases):
        arrays = random_update_case(rng)
        options = launch(case)
        expected = ref.update_model_status(*(arrays[name] for name in UPDATE_NAMES))
        assert_all_equal((*UPDATE_OUTPUTS, "has_running"), update(arrays, options), expected,
                         f"case {case} {describe(options)}")


def check_large_batch(verify, update, launch, batch: int) -> None:
    """Every strategy's verify and the update on one batch of ``batch`` slots equal the reference."""
    rng = np.random.default_rng(batch)
    for n, strategy in enumerate(STRATEGIES):
        arrays, attrs = random_verify_case(rng, strategy=strategy, batch=batch, k=5)
        expected = ref.verify_draft_tokens(*(arrays[name] for name in VERIFY_NAMES), **attrs)
        assert_all_equal(("accept_tokens", "accept_num"), verify(arrays, attrs, launch(n)), expected, strategy)
    arrays = random_update_case(rng, batch=batch, k=5, max_model_len=64)
    expected = ref.update_model_status(*(arrays[name] for name in UPDATE_NAMES))
    assert_all_equal((*UPDATE_OUTPUTS, "has_running"), update(arrays, launch(batch)), expected)


def check_empty_batch_writes_has_running(update, launch) -> None:
    arrays = random_update_case(np.random.default_rng(3), batch=1)
    empty = {name: value[:0] if name not in ("end_tokens",) else value for name, value in arrays.items()}
    assert update(empty, launch(0))[-1].tolist() == [False]


def test_update_random_batches_match_the_reference():
    check_update_random_batches(update_xpu, launch, describe, cases=600)


@pytest.mark.parametrize("batch", [1, 100, 1000])
def test_large_batches_match_the_reference(batch):
    check_large_batch(verify_xpu, update_xpu, launch, batch)


def test_empty_batch_writes_has_running():
    check_empty_batch_writes_has_running(update_xpu, launch)


def test_end_tokens_past_the_xpu_limit_are_an_error():
    arrays = random_update_case(np.random.default_rng(4), batch=2)
    arrays["end_tokens"] = np.arange(65, dtype=np.int64)
    with pytest.raises(FastspecArgumentError, match="E = 65 .* XPU limit of 64"):
        update_xpu(arrays, launch(0))

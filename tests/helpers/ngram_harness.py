"""Running either n-gram op (ngram_match, ngram_append) on one case: Paddle op, bindings, reference."""

from __future__ import annotations

import numpy as np

import fastspec.arrays
from fastspec import reference as ref
from tests.helpers.ngram_append_cases import random_append_case
from tests.helpers.ngram_cases import ARRAY_NAMES, random_case

RANDOM_CASES = {"ngram_match": random_case, "ngram_append": random_append_case}
FIRST_SEEDS = {"ngram_match": 1000, "ngram_append": 4000}  # the CPU tests' first chunk of each op


def run_paddle(op: str, arrays: dict, attrs: dict) -> tuple[np.ndarray, np.ndarray]:
    """The Paddle op on CPU tensors; checks that the in-place tensors are the ones returned."""
    import paddle

    import fastspec.ops as ops

    tensors = {name: paddle.to_tensor(arrays[name]) for name in ARRAY_NAMES}
    drafts, lens = getattr(ops, op)(*(tensors[name] for name in ARRAY_NAMES), **attrs)
    assert drafts is tensors["draft_tokens"] and lens is tensors["seq_lens_this_time"]
    return drafts.numpy(), lens.numpy()


def run_reference(op: str, arrays: dict, attrs: dict) -> tuple[np.ndarray, np.ndarray]:
    return getattr(ref, op)(*(arrays[name] for name in ARRAY_NAMES), **attrs)


def assert_same(actual, expected, context: str = "") -> None:
    np.testing.assert_array_equal(actual[0], expected[0], err_msg=f"draft_tokens {context}")
    np.testing.assert_array_equal(actual[1], expected[1], err_msg=f"seq_lens_this_time {context}")


def run_with(op: str, arrays: dict, attrs: dict, options: dict) -> tuple[np.ndarray, np.ndarray]:
    """The array API's ``op`` on copies: the CPU kernels for ``options = {}``, else the backend (and
    its grid or block order) that ``options`` names."""
    copies = {name: np.ascontiguousarray(arrays[name]).copy() for name in ARRAY_NAMES}
    getattr(fastspec.arrays, op)(*(copies[name] for name in ARRAY_NAMES), **attrs, **options)
    return copies["draft_tokens"], copies["seq_lens_this_time"]


def check_random_batches(op: str, seed: int, cases: int = 300) -> None:
    """On ``cases`` random batches drawn from ``seed``, the Paddle op and the array API equal the reference."""
    rng = np.random.default_rng(seed)
    for case in range(cases):
        arrays, attrs = RANDOM_CASES[op](rng)
        expected = run_reference(op, arrays, attrs)
        assert_same(run_paddle(op, arrays, attrs), expected, f"seed {seed} case {case} {attrs}")
        assert_same(run_with(op, arrays, attrs, {}), expected, f"array API, seed {seed} case {case}")


def check_long_contexts(op: str, seed: int, count: int, batch: int, max_model_len: int) -> None:
    """Batches long enough for the CPU kernel's thread pool equal the reference."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        arrays, attrs = RANDOM_CASES[op](rng, batch=batch, max_model_len=max_model_len)
        assert_same(run_paddle(op, arrays, attrs), run_reference(op, arrays, attrs))

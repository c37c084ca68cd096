"""``verify_draft_tokens`` with a strategy that reads probabilities (REJECTION, BLOCK) through both front ends,
on the arrays of ``tests/rejection_cases`` (``ARRAY_NAMES``)."""

from __future__ import annotations

import numpy as np
import paddle

import fastspec.arrays
import fastspec.ops as ops
from tests.helpers.op_names import PROBS
from tests.helpers.op_names import probability_positional as positional


def run_op(arrays: dict, dtype: str = "float32", strategy: str = "rejection", **attrs):
    """The Paddle op, the probabilities cast to ``dtype``: ``((accept_tokens, accept_num), seen)`` where ``seen``
    holds the probabilities the kernel read, for the reference (f16 as is, bf16 as its uint16 bits)."""
    tensors = {name: None if value is None else paddle.to_tensor(value) for name, value in arrays.items()}
    for name in PROBS:
        tensors[name] = tensors[name].astype(dtype)
    tokens, num = ops.verify_draft_tokens(
        *positional(tensors),
        strategy=strategy,
        target_probs=tensors["target_probs"],
        draft_probs=tensors["draft_probs"],
        **attrs,
    )
    assert tokens is tensors["accept_tokens"] and num is tensors["accept_num"]  # in place
    return (tokens.numpy(), num.numpy()), {name: tensors[name].numpy() for name in PROBS}


def run_bindings(arrays: dict, strategy: str = "rejection", **attrs):
    """``fastspec.arrays`` on copies of the arrays: ``(accept_tokens, accept_num)``."""
    c = {name: None if value is None else np.ascontiguousarray(value).copy() for name, value in arrays.items()}
    fastspec.arrays.verify_draft_tokens(
        *positional(c), strategy=strategy, target_probs=c["target_probs"], draft_probs=c["draft_probs"], **attrs
    )
    return c["accept_tokens"], c["accept_num"]


def assert_same(actual, expected, context: str = "") -> None:
    np.testing.assert_array_equal(actual[0], expected[0], err_msg=f"accept_tokens {context}")
    np.testing.assert_array_equal(actual[1], expected[1], err_msg=f"accept_num {context}")


def check_random_batches(strategy: str, dtype: str, seed: int, cases: int) -> None:
    """On ``cases`` random batches drawn from ``seed`` (a tenth under ``accept_all``, a tenth under ``reject_all``),
    the Paddle op with the probabilities in ``dtype`` equals the reference; in float32 the bindings too."""
    from fastspec import reference as ref
    from tests.helpers.rejection_cases import ARRAY_NAMES, random_case

    reference = getattr(ref, f"verify_{strategy}")
    rng = np.random.default_rng(seed)
    for case in range(cases):
        arrays = random_case(rng)
        roll = rng.random()
        attrs = {"accept_all": True} if roll < 0.1 else {"reject_all": True} if roll < 0.2 else {}
        got, seen = run_op(arrays, dtype, strategy, **attrs)
        expected = reference(*({**arrays, **seen}[name] for name in ARRAY_NAMES), **attrs)
        assert_same(got, expected, f"{dtype} case {case} {attrs}")
        if dtype == "float32":
            assert_same(run_bindings(arrays, strategy, **attrs), expected, f"bindings case {case}")

"""Random and edge-case calls of step_status (numpy), shared by the CPU, emulated CUDA and emulated XPU tests and
the fuzzer: records and kept tokens of any int64 value, every flag, lengths of any int32 value, K from 0 to the
XPU's limit."""

from __future__ import annotations

import numpy as np

from tests.helpers.named_outputs import assert_outputs_equal

NAMES = (
    "step_record",
    "accept_num",
    "accept_tokens",
    "stop_flags",
    "is_block_step",
    "seq_lens_encoder",
    "seq_lens_decoder",
)
OUTPUTS = ("status",)
INT32, INT64 = np.iinfo(np.int32), np.iinfo(np.int64)


def case(rng: np.random.Generator, batch: int | None = None, k: int | None = None) -> tuple[dict, dict]:
    batch = int(rng.integers(1, 10)) if batch is None else batch
    k = int(rng.choice([0, 1, 3, 5, int(rng.integers(0, 128))])) if k is None else k
    wide = rng.random() < 0.25  # values at the ends of their types

    def ints(info, shape):
        low, high = (info.min, info.max) if wide else (-1, 1000)
        return rng.integers(low, high, shape, endpoint=True)

    return {
        "step_record": ints(INT64, (batch, k + 2)).astype(np.int64),
        "accept_num": ints(INT32, batch).astype(np.int32),
        "accept_tokens": ints(INT64, (batch, k + 1)).astype(np.int64),
        "stop_flags": rng.random(batch) < 0.5,
        "is_block_step": rng.random(batch) < 0.2,
        "seq_lens_encoder": ints(INT32, batch).astype(np.int32),
        "seq_lens_decoder": ints(INT32, batch).astype(np.int32),
    }, {}


def cases(seed: int, count: int, **kw) -> list[tuple[dict, dict]]:
    rng = np.random.default_rng(seed)
    return [case(rng, **kw) for _ in range(count)]


def run_arrays(arrays: dict, attrs: dict, **options) -> dict[str, np.ndarray]:
    import fastspec.arrays

    c = {name: np.ascontiguousarray(value).copy() for name, value in arrays.items()}
    return {"status": np.asarray(fastspec.arrays.step_status(*(c[name] for name in NAMES), **attrs, **options))}


def run_reference(arrays: dict, attrs: dict) -> dict[str, np.ndarray]:
    from fastspec import reference as ref

    return {"status": ref.step_status(*(arrays[name] for name in NAMES), **attrs)}


def assert_equal(actual: dict, expected: dict, context: str = "") -> None:
    assert_outputs_equal("step_status", OUTPUTS, actual, expected, context)

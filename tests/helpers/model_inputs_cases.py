"""Random and edge-case calls of model_inputs (numpy), shared by the CPU, emulated CUDA and emulated XPU tests
and the fuzzer: packings written by pack_rows (prefill, decode, idle slots, padding rows) and wild ones (rows
that run past the grid, negative and huge lengths and positions, cu going backwards, row ids outside the batch),
K from 0 to the XPU's limit."""

from __future__ import annotations

import numpy as np

from tests.helpers.named_outputs import assert_outputs_equal, reference_outputs

NAMES = (
    "token_ids_all",
    "prompt_lens",
    "step_idx",
    "seq_lens_encoder",
    "draft_tokens",
    "cu_seqlens_q_output",
    "batch_id_per_token_output",
)
OUTPUTS = ("tokens", "lengths", "row_pos")
INT64 = np.iinfo(np.int64)


def case(
    rng: np.random.Generator,
    batch: int | None = None,
    k: int | None = None,
    cols: int | None = None,
    wild: bool | None = None,
) -> tuple[dict[str, np.ndarray], dict]:
    batch = int(rng.integers(1, 10)) if batch is None else batch
    k = int(rng.choice([0, 1, 3, 5, int(rng.integers(0, 128))])) if k is None else k
    cols = int(rng.choice([1, 8, 40, 300, int(rng.integers(1, 600))])) if cols is None else cols
    wild = bool(rng.random() < 0.25) if wild is None else wild
    prompt = rng.integers(1, max(2, cols // 2), batch)
    step = rng.integers(0, max(1, cols // 2), batch)
    enc = np.where(rng.random(batch) < 0.3, prompt + step, 0)
    rows = np.where(enc > 0, 1, rng.integers(0, k + 2, batch))
    rows[rng.random(batch) < 0.15] = 0
    cu = np.concatenate([[0], np.cumsum(rows)])
    capacity = int(cu[-1]) + int(rng.integers(0, 6))
    ids = np.full(capacity, -1, np.int64)
    ids[: cu[-1]] = np.repeat(np.arange(batch), rows)
    if wild:
        prompt[rng.random(batch) < 0.3] = rng.choice([INT64.max, INT64.min, -5, cols + 3])
        step[rng.random(batch) < 0.3] = rng.choice([INT64.max, -2, cols])
        cu = cu + rng.integers(-3, 4, batch + 1) * (rng.random(batch + 1) < 0.3)
        ids[rng.random(capacity) < 0.2] = rng.choice([batch, 2**31 - 1, -(2**31), 0])
    return {
        "token_ids_all": rng.integers(-1, 1000, (batch, cols)).astype(np.int64),
        "prompt_lens": prompt.astype(np.int64),
        "step_idx": step.astype(np.int64),
        "seq_lens_encoder": enc.astype(np.int32),
        "draft_tokens": rng.integers(-1, 1000, (batch, k + 1)).astype(np.int64),
        "cu_seqlens_q_output": cu.astype(np.int32),
        "batch_id_per_token_output": ids.astype(np.int32),
    }, {}


def cases(seed: int, count: int, **kw) -> list[tuple[dict, dict]]:
    rng = np.random.default_rng(seed)
    return [case(rng, **kw) for _ in range(count)]


def run_arrays(arrays: dict, attrs: dict, **options) -> dict[str, np.ndarray]:
    import fastspec.arrays

    c = {name: np.ascontiguousarray(value).copy() for name, value in arrays.items()}
    result = fastspec.arrays.model_inputs(*(c[name] for name in NAMES), **attrs, **options)
    return {name: np.asarray(getattr(result, name)) for name in OUTPUTS}


def run_reference(arrays: dict, attrs: dict) -> dict[str, np.ndarray]:
    return reference_outputs("model_inputs", NAMES, OUTPUTS, arrays, attrs)


def assert_equal(actual: dict, expected: dict, context: str = "") -> None:
    assert_outputs_equal("model_inputs", OUTPUTS, actual, expected, context)

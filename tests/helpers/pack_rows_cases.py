"""Random and edge-case calls of pack_rows (numpy), shared by the CPU, emulated CUDA and emulated XPU tests
and the fuzzer: every slot kind (prefill, decode, stopped, blocked, inactive), with and without a proposal,
proposal lengths past K and negative, seq_lens_this_time negative and huge (the saturated prefix sums),
row capacities below, at and above the packed rows, K from 0 to the XPU's limit."""

from __future__ import annotations

import numpy as np

from tests.helpers.named_outputs import assert_outputs_equal, reference_outputs

NAMES = (
    "stop_flags",
    "is_block_step",
    "seq_lens_encoder",
    "seq_lens_decoder",
    "draft_tokens",
    "seq_lens_this_time",
    "cu_seqlens_q_output",
    "batch_id_per_token_output",
    "proposal_tokens",
    "proposal_lens",
)
OUTPUTS = ("draft_tokens", "seq_lens_this_time", "cu_seqlens_q_output", "batch_id_per_token_output", "step_record")
INT32 = np.iinfo(np.int32)


def case(
    rng: np.random.Generator, batch: int | None = None, k: int | None = None, proposal: bool | None = None
) -> tuple[dict[str, np.ndarray | None], dict]:
    batch = int(rng.integers(1, 12)) if batch is None else batch
    k = int(rng.choice([0, 1, 3, 5, 8, int(rng.integers(0, 128))])) if k is None else k
    proposal = bool(rng.random() < 0.7) if proposal is None else proposal
    kind = rng.integers(0, 5, batch)  # 0 prefill, 1-2 decode, 3 free, 4 odd values
    enc = np.where(kind == 0, rng.integers(1, 50, batch), 0)
    dec = np.where((kind == 1) | (kind == 2), rng.integers(1, 500, batch), 0)
    enc = np.where(kind == 4, rng.choice([0, -3, 7], batch), enc)
    dec = np.where(kind == 4, rng.choice([0, -1, 9], batch), dec)
    fed = np.where(kind == 0, enc, np.where(kind < 3, rng.integers(0, k + 2, batch), 0))
    wild = rng.random(batch) < 0.1
    fed[wild] = rng.choice(np.array([-5, INT32.max, INT32.max // 3, 0]), int(wild.sum()))
    lens = rng.integers(-2, k + 3, batch)
    lens[rng.random(batch) < 0.05] = INT32.min
    rows_capacity = int(rng.choice([0, 1, batch * (k + 1), batch * (k + 1) + 5, int(rng.integers(0, 40))]))
    arrays = {
        "stop_flags": rng.random(batch) < 0.15,
        "is_block_step": rng.random(batch) < 0.1,
        "seq_lens_encoder": enc.astype(np.int32),
        "seq_lens_decoder": dec.astype(np.int32),
        "draft_tokens": rng.integers(-1, 1000, (batch, k + 1)).astype(np.int64),
        "seq_lens_this_time": fed.astype(np.int32),
        "cu_seqlens_q_output": rng.integers(-9, 9, batch + 1).astype(np.int32),
        "batch_id_per_token_output": rng.integers(-9, 9, rows_capacity).astype(np.int32),
        "proposal_tokens": rng.integers(-1, 1000, (batch, k)).astype(np.int64) if proposal else None,
        "proposal_lens": lens.astype(np.int32) if proposal else None,
    }
    return arrays, {}


def cases(seed: int, count: int, **kw) -> list[tuple[dict, dict]]:
    rng = np.random.default_rng(seed)
    return [case(rng, **kw) for _ in range(count)]


def run_arrays(arrays: dict, attrs: dict, **options) -> dict[str, np.ndarray]:
    """The op through fastspec.arrays on copies; its in-place tensors after the call and its record."""
    import fastspec.arrays

    c = {name: None if value is None else np.ascontiguousarray(value).copy() for name, value in arrays.items()}
    result = fastspec.arrays.pack_rows(*(c[name] for name in NAMES), **attrs, **options)
    return {**{name: c[name] for name in OUTPUTS[:-1]}, "step_record": np.asarray(result.step_record)}


def run_reference(arrays: dict, attrs: dict) -> dict[str, np.ndarray]:
    return reference_outputs("pack_rows", NAMES, OUTPUTS, arrays, attrs)


def assert_equal(actual: dict, expected: dict, context: str = "") -> None:
    assert_outputs_equal("pack_rows", OUTPUTS, actual, expected, context)

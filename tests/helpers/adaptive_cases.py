"""Random and edge-case calls of adaptive_plan and adaptive_observe (numpy), shared by the CPU,
emulated CUDA and emulated XPU tests: states as the controller makes them (decoding, free and
prefilling slots, tied estimates, ``found`` at halves so the row count rounds half to even) and
values it never makes (NaN and negative estimates, zero and infinite costs, wild row counts)."""

from __future__ import annotations

import numpy as np

from fastspec.reference.adaptive import controller_rates

PLAN_NAMES = (
    "acceptance",
    "found",
    "step_cost",
    "rates",
    "seq_lens_encoder",
    "stop_flags",
    "is_block_step",
    "probe_step",
    "draft_token_num",
    "worth",
    "ranking",
)
OBSERVE_NAMES = ("acceptance", "found", "draft_token_num", "cu_seqlens_q_output", "accept_num", "rates")


def _acceptance(rng: np.random.Generator, b: int, k: int, wild: bool) -> np.ndarray:
    acc = rng.random((b, k + 1)).astype(np.float32)
    acc[:, 0] = rng.random(b) < 0.8  # decoding flag
    acc[rng.random((b, k + 1)) < 0.2] = 0.6  # the prior: ties across slots
    acc[rng.random((b, k + 1)) < 0.1] = 1.0
    if wild:
        acc[rng.random((b, k + 1)) < 0.05] = np.nan
        acc[rng.random((b, k + 1)) < 0.05] = -0.5
        acc[rng.random((b, k + 1)) < 0.03] = np.inf
    return acc


def plan_case(
    rng: np.random.Generator, b: int | None = None, k: int | None = None, wild: bool = False
) -> tuple[dict[str, np.ndarray], dict]:
    b = b or int(rng.integers(1, 40))
    k = k or int(rng.integers(1, 7))
    found = rng.choice(np.array([1.0, 0.5, 0.25, 0.0, 0.8], np.float32), b)
    found[rng.random(b) < 0.3] = np.float32(rng.random())
    cost_len = int(rng.integers(1, b * (k + 2) + 2))
    tokens = np.arange(1, cost_len + 1, dtype=np.float64)
    cost = (1e-3 + tokens * rng.uniform(1e-6, 1e-4)) * (1 + (tokens > rng.integers(1, cost_len + 1)))
    cost = cost.astype(np.float32)
    if wild:
        found[rng.random(b) < 0.1] = -0.5
        found[rng.random(b) < 0.05] = np.nan
        cost[rng.random(cost_len) < 0.1] = rng.choice(np.array([0.0, np.inf, -1.0], np.float32))
    arrays = {
        "acceptance": _acceptance(rng, b, k, wild),
        "found": found,
        "step_cost": cost,
        "rates": controller_rates(*rng.uniform([0.05, 0.05, 0.1], [1.0, 1.0, 0.9])),
        "seq_lens_encoder": np.where(rng.random(b) < 0.2, rng.integers(1, 50, b), 0).astype(np.int32),
        "stop_flags": rng.random(b) < 0.1,
        "is_block_step": rng.random(b) < 0.1,
        "probe_step": rng.integers(-(2**63), 2**63 - 1, 1, dtype=np.int64) if wild else rng.integers(0, 100, 1),
        "draft_token_num": rng.integers(-3, k + 3, b).astype(np.int32),
        "worth": rng.random((b, k + 1)).astype(np.float32),
        "ranking": rng.integers(-5, 5, (b, k + 1)).astype(np.int32),
    }
    arrays["probe_step"] = arrays["probe_step"].astype(np.int64)
    return arrays, {"probe_interval": int(rng.choice([0, 1, 3, 16]))}


def rise_against_slot_order(acceptance: np.ndarray, run: int) -> None:
    """Makes the first ``run`` slots decode with draft 1 rising by 1e-6 a slot, in place: worths that
    share their top 16 key bits and stand against index order, so the CPU ranking's insertion pass
    moves each past all before it (about run^2 / 2 moves; past its budget of 2 moves a candidate,
    the full radix sort runs instead: custom_ops/cpu/adaptive.cc)."""
    acceptance[:run, 0] = 1.0
    acceptance[:run, 1] = 0.5 + 1e-6 * np.arange(run)


def observe_case(
    rng: np.random.Generator, b: int | None = None, k: int | None = None, wild: bool = False
) -> tuple[dict[str, np.ndarray], dict]:
    b = b or int(rng.integers(1, 40))
    k = k or int(rng.integers(1, 7))
    rows = rng.integers(0, k + 2, b)
    accept = np.minimum(rng.integers(0, k + 2, b), rows)
    if wild:
        rows = rng.integers(-3, k + 5, b)
        accept = rng.integers(-3, k + 5, b)
        accept[rng.random(b) < 0.1] = np.iinfo(np.int32).min
    cu = np.concatenate([[0], np.cumsum(rows)]).astype(np.int32)
    arrays = {
        "acceptance": _acceptance(rng, b, k, wild),
        "found": rng.random(b).astype(np.float32),
        "draft_token_num": rng.integers(-1, k + 1, b).astype(np.int32),
        "cu_seqlens_q_output": cu,
        "accept_num": accept.astype(np.int32),
        "rates": controller_rates(*rng.uniform([0.05, 0.05, 0.1], [1.0, 1.0, 0.9])),
    }
    return arrays, {}


def cases(op: str, seed: int, count: int, **kw) -> list[tuple[dict[str, np.ndarray], dict]]:
    """`count` calls of `op`, every third one wild."""
    rng = np.random.default_rng(seed)
    make = plan_case if op == "adaptive_plan" else observe_case
    return [make(rng, wild=i % 3 == 2, **kw) for i in range(count)]


def names(op: str) -> tuple[str, ...]:
    return PLAN_NAMES if op == "adaptive_plan" else OBSERVE_NAMES


def outputs(op: str) -> tuple[str, ...]:
    return ("probe_step", "draft_token_num", "worth", "ranking") if op == "adaptive_plan" else ("acceptance", "found")


def run_arrays(op: str, arrays: dict[str, np.ndarray], attrs: dict, **options) -> list[np.ndarray]:
    """The op through fastspec.arrays on copies; the in-place arrays after the call."""
    import fastspec.arrays

    c = {name: np.ascontiguousarray(value).copy() for name, value in arrays.items()}
    getattr(fastspec.arrays, op)(*(c[name] for name in names(op)), **attrs, **options)
    return [c[name] for name in outputs(op)]


def run_reference(op: str, arrays: dict[str, np.ndarray], attrs: dict) -> list[np.ndarray]:
    from fastspec import reference as ref

    return list(getattr(ref, op)(*(arrays[name] for name in names(op)), **attrs))


def assert_bit_equal(op: str, actual, expected, context: str = "") -> None:
    """Same bits (NaN payloads aside: a NaN matches a NaN)."""
    for name, a, e in zip(outputs(op), actual, expected):
        a, e = np.asarray(a), np.asarray(e)
        assert a.dtype == e.dtype and a.shape == e.shape, f"{op} {name} {context}"
        same = a.view(f"u{a.itemsize}") == e.view(f"u{e.itemsize}")
        if a.dtype.kind == "f":
            same |= np.isnan(a) & np.isnan(e)
        assert same.all(), f"{op} {name} {context}: {a} != {e}"

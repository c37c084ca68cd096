"""Random and edge-case calls of emitted_logprobs (numpy), shared by the CPU, emulated CUDA and emulated XPU
tests and the fuzzer: temperature_softmax's rows (-inf, +inf, NaN, huge and equal logits) and temperatures,
plateaus across the listed width, chains and trees, counts past K + 1, wild row offsets and token ids, and
widths of 0, a few, past V."""

from __future__ import annotations

import numpy as np

from fastspec.core.schema import MAX_LOGPROBS_WIDTH
from tests.helpers.softmax_cases import TEMPERATURES, _row

NAMES = ("logits", "temperature", "cu_seqlens_q_output", "accept_tokens", "accept_num", "accept_nodes")


def _plateau(rng: np.random.Generator, x: np.ndarray) -> np.ndarray:
    """Many tokens tie at one value (near the top): the list ends inside the plateau."""
    lo = int(rng.integers(0, len(x)))
    x[lo : lo + int(rng.integers(1, 40))] = np.float32(np.nanmax(np.where(np.isfinite(x), x, -1e30)) - rng.random())
    return x


def case(
    rng: np.random.Generator,
    batch: int | None = None,
    vocab: int | None = None,
    width: int | None = None,
    tree: bool | None = None,
) -> tuple[dict[str, np.ndarray | None], dict]:
    batch = int(rng.integers(1, 5)) if batch is None else batch
    cols = int(rng.integers(1, 6))
    vocab = int(rng.choice([1, 3, 16, 255, 256, 257, 700, int(rng.integers(1, 2000))])) if vocab is None else vocab
    lens = rng.integers(0, cols + 1, batch)
    cu = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    rows = int(cu[-1]) + int(rng.integers(0, 3))  # padding rows past the last slot's
    if rng.random() < 0.1:
        cu[rng.integers(0, batch + 1)] = rng.choice([-5, rows + 3, np.iinfo(np.int32).max])
    logits = np.stack([_row(rng, vocab) for _ in range(rows)]) if rows else np.zeros((0, vocab), np.float32)
    for t in range(rows):
        if rng.random() < 0.3:
            logits[t] = _plateau(rng, logits[t])
    num = rng.integers(-1, cols + 2, batch).astype(np.int32)  # counts past K + 1 and negative ones too
    tokens = rng.integers(0, vocab, (batch, cols))
    wild = rng.random((batch, cols)) < 0.1
    tokens[wild] = rng.choice(np.array([-1, vocab, -(2**40), 2**40]), int(wild.sum()))
    tree = bool(rng.random() < 0.4) if tree is None else tree
    nodes = rng.integers(-1, cols + 2, (batch, cols)).astype(np.int32) if tree else None
    width = min(int(rng.choice([0, 1, 5, 20, vocab, vocab + 3])), MAX_LOGPROBS_WIDTH) if width is None else width
    arrays = {
        "logits": logits.astype(np.float32),
        "temperature": rng.choice(TEMPERATURES, batch).astype(np.float32),
        "cu_seqlens_q_output": cu,
        "accept_tokens": tokens.astype(np.int64),
        "accept_num": num,
        "accept_nodes": nodes,
    }
    return arrays, {"width": width}


def cases(seed: int, count: int, **kw) -> list[tuple[dict[str, np.ndarray | None], dict]]:
    rng = np.random.default_rng(seed)
    return [case(rng, **kw) for _ in range(count)]


def run_arrays(arrays: dict, attrs: dict, **options) -> np.ndarray:
    """The op through fastspec.arrays; the keys it returns."""
    import fastspec.arrays

    c = {name: None if value is None else np.ascontiguousarray(value).copy() for name, value in arrays.items()}
    return np.asarray(fastspec.arrays.emitted_logprobs(*(c[name] for name in NAMES), **attrs, **options))


def run_reference(arrays: dict, attrs: dict) -> np.ndarray:
    from fastspec import reference as ref

    return ref.emitted_logprobs(*(arrays[name] for name in NAMES), **attrs)


def assert_bit_equal(actual: np.ndarray, expected: np.ndarray, context: str = "") -> None:
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype == np.int64 and actual.shape == expected.shape, context
    bad = np.argwhere(actual != expected)
    assert bad.size == 0, f"emitted_logprobs {context}: {len(bad)} keys differ, first at {bad[0].tolist()}"

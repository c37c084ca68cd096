"""Random and edge-case calls of temperature_softmax (numpy), shared by the CPU, emulated CUDA and
emulated XPU tests and the fuzzer: vocabularies on and off a lane block (256) and a SIMD width,
temperatures of greedy (0), hot, cold, tiny, negative, subnormal and non-finite requests, padding
and wild row ids, and rows with -inf, +inf, NaN, -0.0, huge and equal logits."""

from __future__ import annotations

import numpy as np

NAMES = ("logits", "temperature", "batch_id_per_token_output")
INT32 = np.iinfo(np.int32)
TEMPERATURES = np.array(
    [1.0, 1.0, 0.7, 0.0, 2.5, 1e-3, 0.05, 10.0, -1.0, 1e-39, np.inf, np.nan, 3e38, 1.1754944e-38], np.float32
)


def _row(rng: np.random.Generator, vocab: int) -> np.ndarray:
    kind = int(rng.integers(0, 9))
    if kind == 0:  # peaked: one token holds nearly everything
        x = rng.normal(0.0, 1.0, vocab).astype(np.float32)
        x[rng.integers(0, vocab)] = 25.0
        return x
    if kind == 1:  # equal logits: a uniform row
        return np.full(vocab, rng.normal(), np.float32)
    if kind == 2:  # masked: most entries -inf (a grammar, bad words)
        x = np.full(vocab, -np.inf, np.float32)
        keep = rng.random(vocab) < 0.05
        keep[rng.integers(0, vocab)] = True
        x[keep] = rng.normal(0.0, 3.0, int(keep.sum()))
        return x
    if kind == 3:  # huge magnitudes: the scaled maximum may overflow, entries fall below the floor
        return rng.choice(np.array([3e38, -3e38, 1e30, -1e30, 0.0, 5.0], np.float32), vocab)
    x = rng.normal(0.0, float(rng.choice([0.5, 4.0, 30.0])), vocab).astype(np.float32)
    special = rng.random(vocab)
    if kind == 4:
        x[special < 0.01] = np.nan
    if kind in (4, 5):
        x[(special >= 0.01) & (special < 0.03)] = -np.inf
        x[(special >= 0.03) & (special < 0.05)] = -0.0
    if kind == 5 and rng.random() < 0.3:
        x[rng.integers(0, vocab)] = np.inf
    return x


def case(
    rng: np.random.Generator, rows: int | None = None, vocab: int | None = None, batch: int | None = None
) -> tuple[dict[str, np.ndarray], dict]:
    rows = int(rng.integers(0, 10)) if rows is None else rows
    vocab = (
        int(rng.choice([1, 2, 7, 8, 15, 16, 17, 255, 256, 257, 511, 1000, 2049, int(rng.integers(1, 3000))]))
        if vocab is None
        else vocab
    )
    batch = int(rng.integers(1, 6)) if batch is None else batch
    ids = rng.integers(-1, batch, rows)
    wild = rng.random(rows) < 0.1
    ids[wild] = rng.choice(np.array([INT32.min, INT32.max, -2, batch]), int(wild.sum()))
    temperature = rng.choice(TEMPERATURES, batch).astype(np.float32)
    logits = np.stack([_row(rng, vocab) for _ in range(rows)]) if rows else np.zeros((0, vocab), np.float32)
    return {"logits": logits, "temperature": temperature, "batch_id_per_token_output": ids.astype(np.int32)}, {}


def cases(seed: int, count: int, **kw) -> list[tuple[dict[str, np.ndarray], dict]]:
    rng = np.random.default_rng(seed)
    return [case(rng, **kw) for _ in range(count)]


def run_arrays(arrays: dict[str, np.ndarray], attrs: dict, **options) -> np.ndarray:
    """The op through fastspec.arrays; the probabilities it returns."""
    import fastspec.arrays

    c = {name: np.ascontiguousarray(value).copy() for name, value in arrays.items()}
    return np.asarray(fastspec.arrays.temperature_softmax(*(c[name] for name in NAMES), **attrs, **options))


def run_reference(arrays: dict[str, np.ndarray], attrs: dict) -> np.ndarray:
    from fastspec import reference as ref

    return ref.temperature_softmax(*(arrays[name] for name in NAMES), **attrs)


def assert_bit_equal(actual: np.ndarray, expected: np.ndarray, context: str = "") -> None:
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype == np.float32 and actual.shape == expected.shape, context
    bad = np.argwhere(actual.view(np.uint32) != expected.view(np.uint32))
    assert bad.size == 0, f"temperature_softmax {context}: {len(bad)} entries differ, first at {bad[0].tolist()}"

"""Random and edge-case calls of apply_token_bitmask (numpy), shared by the CPU, emulated CUDA and
emulated XPU tests and the fuzzer: every logits dtype, vocabularies on and off a word boundary, masks
narrower and wider than the vocabulary, words all set, all clear, one bit and random, indices of free
rows (-1), of rows outside the masks and wild ones, and logits holding NaN, infinities and -0.0."""

from __future__ import annotations

import numpy as np

NAMES = ("logits", "token_bitmask", "bitmask_index")
DTYPES = ("float32", "float16", "bfloat16")
INT32 = np.iinfo(np.int32)


def _logits(rng: np.random.Generator, rows: int, vocab: int, dtype: str) -> np.ndarray:
    x = rng.normal(0.0, 4.0, (rows, vocab)).astype(np.float32)
    special = rng.random((rows, vocab))
    x[special < 0.02] = np.nan
    x[(special >= 0.02) & (special < 0.04)] = np.inf
    x[(special >= 0.04) & (special < 0.06)] = -np.inf
    x[(special >= 0.06) & (special < 0.08)] = -0.0
    if dtype == "float32":
        return x
    if dtype == "float16":
        return x.astype(np.float16)
    from tests.helpers.sampling_cases import to_bf16_bits

    return to_bf16_bits(x)


def _words(rng: np.random.Generator, masks: int, words: int) -> np.ndarray:
    kind = rng.integers(0, 5, (masks, 1))
    random = rng.integers(INT32.min, INT32.max, (masks, words), dtype=np.int64, endpoint=True)
    one_bit = (np.int64(1) << rng.integers(0, 32, (masks, words))).astype(np.uint32).view(np.int32)
    sparse = np.where(rng.random((masks, words)) < 0.7, 0, random)
    out = np.select(
        [kind == 0, kind == 1, kind == 2, kind == 3],
        [np.full_like(random, -1), np.zeros_like(random), one_bit.astype(np.int64), sparse],
        random,
    )
    dense = rng.random((masks, words)) < 0.3  # some all-set words inside any mask: the skip paths
    out[dense] = -1
    return out.astype(np.int32)


def case(
    rng: np.random.Generator, rows: int | None = None, vocab: int | None = None, dtype: str | None = None
) -> tuple[dict[str, np.ndarray], dict]:
    rows = int(rng.integers(0, 12)) if rows is None else rows
    vocab = (
        int(rng.choice([1, 31, 32, 33, 64, 100, 1023, 1024, 1025, 2100, int(rng.integers(1, 3000))]))
        if vocab is None
        else vocab
    )
    dtype = dtype or str(rng.choice(DTYPES))
    natural = (vocab + 31) // 32
    words = max(1, natural + int(rng.choice([0, 0, 0, -1, 1, -natural // 2])))  # narrower masks forbid the tail
    masks = int(rng.integers(1, 6))
    index = rng.integers(-2, masks + 2, rows)
    wild = rng.random(rows) < 0.1
    index[wild] = rng.choice(np.array([INT32.min, INT32.max, -1, masks]), int(wild.sum()))
    return {
        "logits": _logits(rng, rows, vocab, dtype),
        "token_bitmask": _words(rng, masks, words),
        "bitmask_index": index.astype(np.int32),
    }, {}


def cases(seed: int, count: int, **kw) -> list[tuple[dict[str, np.ndarray], dict]]:
    rng = np.random.default_rng(seed)
    return [case(rng, **kw) for _ in range(count)]


def run_arrays(arrays: dict[str, np.ndarray], attrs: dict, **options) -> np.ndarray:
    """The op through fastspec.arrays on copies; the logits after the call."""
    import fastspec.arrays

    c = {name: np.ascontiguousarray(value).copy() for name, value in arrays.items()}
    fastspec.arrays.apply_token_bitmask(*(c[name] for name in NAMES), **attrs, **options)
    return c["logits"]


def run_reference(arrays: dict[str, np.ndarray], attrs: dict) -> np.ndarray:
    from fastspec import reference as ref

    return ref.apply_token_bitmask(*(arrays[name] for name in NAMES), **attrs)


def assert_bit_equal(actual: np.ndarray, expected: np.ndarray, context: str = "") -> None:
    """The same bits, NaN payloads included (the op never computes a value, it only writes -inf)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, context
    a, e = actual.view(f"u{actual.itemsize}"), expected.view(f"u{expected.itemsize}")
    bad = np.argwhere(a != e)
    assert bad.size == 0, f"apply_token_bitmask {context}: {len(bad)} entries differ, first at {bad[0].tolist()}"

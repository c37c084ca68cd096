"""Random and edge-case calls of process_logits (numpy), shared by the CPU, emulated CUDA and
emulated XPU tests and the fuzzer: small vocabularies so that tokens repeat in the history and the
drafts, chains and trees, bad words cut from the history's tail so that they match, and values a
runner never makes (NaN and infinite penalties and logits, ids outside the vocabulary, negative and
huge lengths, malformed trees, rows off their slot)."""

from __future__ import annotations

import numpy as np

from fastspec.core.schema import SCHEMAS

NAMES = SCHEMAS["process_logits"].input_names


def case(
    rng: np.random.Generator,
    b: int | None = None,
    k: int | None = None,
    vocab: int | None = None,
    max_len: int | None = None,
    wild: bool = False,
    tree: bool | None = None,
) -> dict[str, np.ndarray]:
    b = b or int(rng.integers(1, 8))
    k = int(rng.integers(0, 6)) if k is None else k
    vocab = vocab or int(rng.integers(2, 40))
    max_len = int(rng.integers(1, 40)) if max_len is None else max_len
    tree = bool(rng.random() < 0.4) if tree is None else tree
    cols = k + 1
    low = -2 if wild else 0
    high = vocab + 2 if wild else vocab
    history = rng.integers(low, high, (b, max_len)).astype(np.int64)
    prompt = rng.integers(0, max_len + 1, b)
    step = np.array([rng.integers(0, max_len - p + 1) for p in prompt])
    if wild:
        prompt = np.where(rng.random(b) < 0.15, rng.choice([-5, max_len + 3, 2**62]), prompt)
        step = np.where(rng.random(b) < 0.15, rng.choice([-3, max_len + 1, 2**63 - 1]), step)
    drafts = rng.integers(low, high, (b, cols)).astype(np.int64)
    rows = rng.integers(0, cols + 1, b)
    cu = np.concatenate([[0], np.cumsum(rows)]).astype(np.int32)
    padding = int(rng.integers(0, 3))
    padding_ids = rng.choice([-1, b, 2**31 - 1], padding)
    batch_id = np.concatenate([np.repeat(np.arange(b), rows), padding_ids]).astype(np.int32)
    if wild and len(batch_id):
        batch_id[rng.random(len(batch_id)) < 0.1] = int(rng.integers(0, b))  # a row off its slot's range
    total = len(batch_id)

    def penalty(neutral: float, lo: float, hi: float) -> np.ndarray:
        values = np.where(rng.random(b) < 0.3, neutral, rng.uniform(lo, hi, b))
        if wild:
            values[rng.random(b) < 0.15] = rng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0])
        return values.astype(np.float32)

    logits = (rng.standard_normal((total, vocab)) * 4).astype(np.float32)
    logits[rng.random((total, vocab)) < 0.05] = 0.0
    logits[rng.random((total, vocab)) < 0.03] = -0.0
    if wild:
        logits[rng.random((total, vocab)) < 0.03] = rng.choice(np.array([np.nan, np.inf, -np.inf], np.float32))

    stops, nb, width = int(rng.integers(1, 4)), int(rng.integers(1, 5)), int(rng.integers(1, 12))
    bias_ids = rng.integers(-1 if not wild else -3, high, (b, nb)).astype(np.int64)
    bias_ids[:, -1] = np.where(rng.random(b) < 0.3, bias_ids[:, 0], bias_ids[:, -1])  # a repeated id
    bias_values = rng.uniform(-100, 100, (b, nb)).astype(np.float32)
    if wild:
        bias_values[rng.random((b, nb)) < 0.1] = np.nan
    bad = np.full((b, width), -1, np.int64)
    for s in range(b):
        start = min(max(int(prompt[s]), 0), max_len)
        out = [int(x) for x in history[s, start : start + min(max(int(step[s]), 0), max_len - start)]]
        words: list[int] = []
        while len(words) < width:
            n = int(rng.integers(0, 5))
            if 1 < n <= len(out) + 1 and rng.random() < 0.6:  # the output's tail: it matches
                prefix = out[len(out) - (n - 1) :]
            else:
                prefix = [int(x) for x in rng.integers(0, vocab, max(n - 1, 0))]
            words += (prefix + [int(rng.integers(0, high))] if n else []) + [-1] * int(rng.integers(1, 3))
        bad[s] = words[:width]  # the last word may run to the row's end
    if wild:
        bad[rng.random(bad.shape) < 0.05] = -7
    arrays = {
        "logits": logits,
        "token_ids_all": history,
        "prompt_lens": prompt.astype(np.int64),
        "step_idx": step.astype(np.int64),
        "draft_tokens": drafts,
        "batch_id_per_token_output": batch_id,
        "cu_seqlens_q_output": cu,
        "repetition_penalty": penalty(1.0, 0.5, 2.5),
        "presence_penalty": penalty(0.0, -1.0, 2.0),
        "frequency_penalty": penalty(0.0, -1.0, 2.0),
        "min_tokens": np.where(rng.random(b) < 0.1 * wild, 2**63 - 1, rng.integers(-2, max_len + cols + 2, b)),
        "end_tokens": rng.integers(low, high, int(rng.integers(1, 4))).astype(np.int64),
        "stop_token_ids": np.where(rng.random((b, stops)) < 0.4, -1, rng.integers(0, high, (b, stops))).astype(
            np.int64
        ),
        "logit_bias_ids": bias_ids,
        "logit_bias_values": bias_values,
        "bad_words": bad,
        "draft_parents": tree_parents(rng, b, cols, wild) if tree else None,
    }
    return arrays


def tree_parents(rng: np.random.Generator, b: int, cols: int, wild: bool) -> np.ndarray:
    """Each node's parent before it (node 0: -1); wild trees point forward or far away."""
    parents = np.full((b, cols), -1, np.int32)
    for i in range(1, cols):
        parents[:, i] = rng.integers(0, i, b)
    if wild and cols > 1:
        parents[rng.random((b, cols)) < 0.15] = rng.choice([-4, cols, 2**31 - 1])
    return parents


def cases(seed: int, count: int, **kw) -> list[dict[str, np.ndarray]]:
    """`count` calls, every third one wild."""
    rng = np.random.default_rng(seed)
    return [case(rng, wild=i % 3 == 2, **kw) for i in range(count)]


def run_arrays(arrays: dict[str, np.ndarray], **options) -> np.ndarray:
    """The op through fastspec.arrays on a copy of the logits; the logits after the call."""
    import fastspec.arrays

    c = {name: None if value is None else np.ascontiguousarray(value).copy() for name, value in arrays.items()}
    fastspec.arrays.process_logits(*(c[name] for name in NAMES), **options)
    return c["logits"]


def run_reference(arrays: dict[str, np.ndarray]) -> np.ndarray:
    from fastspec import reference as ref

    return ref.process_logits(*(arrays[name] for name in NAMES))


def assert_bit_equal(actual: np.ndarray, expected: np.ndarray, context: str = "") -> None:
    """Same bits (NaN payloads aside: a NaN matches a NaN)."""
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, context
    same = (actual.view(np.uint32) == expected.view(np.uint32)) | (np.isnan(actual) & np.isnan(expected))
    bad = np.argwhere(~same)
    assert not len(bad), (
        f"process_logits {context}: {len(bad)} entries differ, first at {bad[0].tolist()}: "
        f"{actual[tuple(bad[0])]} != {expected[tuple(bad[0])]}"
    )

"""The op calls the emulated-device tests make: each takes numpy arrays and the launch keywords
(``{}`` runs the CPU kernels), works on copies, and fills its outputs with garbage first so that
every element the kernel should write is checked."""

from __future__ import annotations

import numpy as np

from fastspec import arrays
from fastspec import reference as ref
from tests.helpers.op_names import SLOT_STATE
from tests.helpers.sampling_cases import to_bf16_bits
from tests.helpers.verify_update_cases import UPDATE_NAMES, UPDATE_OUTPUTS, VERIFY_NAMES


def copies(named: dict) -> dict:
    return {name: None if value is None else np.ascontiguousarray(value).copy() for name, value in named.items()}


def in_dtype(probs: np.ndarray, dtype: str) -> np.ndarray:
    """The probabilities as the kernels and the reference read them (bfloat16 as uint16 bits)."""
    if dtype == "float32":
        return np.ascontiguousarray(probs, np.float32)
    return probs.astype(np.float16) if dtype == "float16" else to_bf16_bits(probs)


def verify(named: dict, attrs: dict, options: dict) -> tuple[np.ndarray, np.ndarray]:
    c = copies(named)
    arrays.verify_draft_tokens(*(c[name] for name in VERIFY_NAMES), **attrs, **options)
    return c["accept_tokens"], c["accept_num"]


def rejection(named: dict, attrs: dict, options: dict, strategy: str = "rejection") -> tuple[np.ndarray, np.ndarray]:
    """verify_draft_tokens with draft probabilities: strategy REJECTION or BLOCK."""
    c = copies(named)
    positional = [
        c["accept_tokens"],
        c["accept_num"],
        c["draft_tokens"],
        None,
        None,
        None,
        None,
        *(c[name] for name in SLOT_STATE),
    ]
    arrays.verify_draft_tokens(
        *positional, strategy=strategy, target_probs=c["target_probs"], draft_probs=c["draft_probs"], **attrs, **options
    )
    return c["accept_tokens"], c["accept_num"]


def update(named: dict, options: dict) -> list[np.ndarray]:
    c = copies(named)
    has_running = np.ones(1, np.bool_)  # overwritten, even for an empty batch
    arrays.update_model_status(*(c[name] for name in UPDATE_NAMES), has_running, **options)
    return [c[name] for name in UPDATE_OUTPUTS] + [has_running]


def candidates(probs, top_p, batch_id, k, options, min_p=None):
    rows = probs.shape[0]
    ids = np.full((rows, k), 777, np.int64)
    scores = np.full((rows, k), 5.0, np.float32)
    lens = np.full(rows, 999, np.int32)
    arrays.top_p_candidates(
        probs,
        top_p,
        batch_id,
        min_p,
        candidate_ids=ids,
        candidate_scores=scores,
        candidate_lens=lens,
        max_candidate_len=k,
        **options,
    )
    return ids, scores, lens


def sample(probs, args, options, rand_stream=ref.STREAM_TARGET, min_p=None):
    tokens = np.full(probs.shape[0], 777, np.int64)
    arrays.sample_tokens(probs, *args, min_p, tokens=tokens, rand_stream=rand_stream, **options)
    return tokens


def renormalised(probs, top_p, top_k, batch_id, options, min_p=None):
    out = np.full(probs.shape, 5.0, np.float32)
    arrays.top_k_top_p_probs(probs, top_p, top_k, batch_id, min_p, target_probs=out, **options)
    return out


def assert_all_equal(names, actual, expected, context=""):
    for name, a, e in zip(names, actual, expected):
        np.testing.assert_array_equal(a, e, err_msg=f"{name} {context}")


def assert_candidates_equal(got, expected, context=""):
    for name, g, e in zip(("candidate_ids", "candidate_scores", "candidate_lens"), got, expected):
        assert np.array_equal(np.ascontiguousarray(g).view(np.uint8), np.ascontiguousarray(e).view(np.uint8)), (
            f"{name} differs at {np.argwhere(g != e)[:5].tolist()} {context}"
        )


def assert_bits(got, want, context=""):
    differ = np.argwhere(got.view(np.uint32) != want.view(np.uint32))
    assert len(differ) == 0, f"{len(differ)} entries differ, first {differ[:4].tolist()} {context}"

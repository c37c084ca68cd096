"""Small random calls of every op for ``python -m fastspec check`` (numpy only).

One call per op (per verify strategy): a few requests, valid inputs of the usual kinds (decode
slots with drafts, a prefilling slot, planted matches so drafts are found and accepted), small
enough that every backend, the emulated XPU included, runs all of them in well under a second.
The tests' builders (``tests/``) cover the edge cases; these only show that each kernel runs and
agrees with the numpy reference on this machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from fastspec import reference as ref
from fastspec.core.schema import PROBABILITY_STRATEGIES, STRATEGIES


@dataclass(frozen=True)
class Case:
    """One op call: its arrays by SPEC name (inputs only; outputs are allocated by the front end)."""

    name: str  # the table's row
    op: str
    arrays: dict[str, np.ndarray]
    attrs: dict[str, Any]
    reference: Callable[[dict[str, np.ndarray], dict[str, Any]], tuple[np.ndarray, ...]]


def _softmax(rng: np.random.Generator, rows: int, vocab: int, scale: float = 3.0) -> np.ndarray:
    logits = rng.normal(0.0, scale, (rows, vocab))
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


def _ngram(rng: np.random.Generator, op: str) -> Case:
    b, length, k = 4, 64, 4
    tokens = rng.integers(0, 8, (b, length)).astype(np.int64)  # 8 ids: repeats everywhere, drafts are found
    prompt = np.array([30, 40, 20, 12], np.int64)
    step = np.array([6, 10, 0, 5], np.int64)
    arrays = {
        "token_ids_all": tokens, "prompt_lens": prompt, "step_idx": step,
        "draft_token_num": np.full(b, k, np.int32),
        "draft_tokens": rng.integers(0, 8, (b, k + 1)).astype(np.int64),
        "seq_lens_this_time": np.array([1, 3, 12, 2], np.int32),  # slot 2 prefills; 1 and 3 carry model drafts
        "seq_lens_encoder": np.array([0, 0, 12, 0], np.int32),
        "seq_lens_decoder": (prompt + step).astype(np.int32) * np.array([1, 1, 0, 1], np.int32),
        "max_dec_len": np.array([1000, 1000, 1000, 7], np.int64),
        "ngram_anchor": np.array([-1, 3, -1, 1], np.int64),
    }
    attrs = {"max_ngram_size": 3, "min_ngram_size": 1, "token_budget": 0}
    names = list(arrays)[:-1]

    def reference(a: dict[str, np.ndarray], at: dict[str, Any]) -> tuple[np.ndarray, ...]:
        return getattr(ref, op)(*(a[n] for n in names), ngram_anchor=a["ngram_anchor"], **at)

    return Case(op, op, arrays, attrs, reference)


def _sampling(rng: np.random.Generator) -> dict[str, np.ndarray]:
    rows = np.array([1, 2, 3])
    b, vocab = len(rows), 1000
    return {
        "probs": _softmax(rng, int(rows.sum()), vocab, scale=6.0),  # peaked: top-p keeps a few tokens
        "top_p": np.array([0.9, 0.5, 1.0], np.float32),
        "top_k": np.array([0, 5, 0], np.int32),
        "seed": rng.integers(0, 2**62, b).astype(np.int64),
        "step_idx": rng.integers(0, 100, b).astype(np.int64),
        "batch_id_per_token_output": np.repeat(np.arange(b), rows).astype(np.int32),
        "cu_seqlens_q_output": np.concatenate([[0], np.cumsum(rows)]).astype(np.int32),
    }


def _top_p_candidates(rng: np.random.Generator) -> Case:
    a = _sampling(rng)
    arrays = {n: a[n] for n in ("probs", "top_p", "batch_id_per_token_output")}
    return Case("top_p_candidates", "top_p_candidates", arrays, {"max_candidate_len": 8},
                lambda x, at: ref.top_p_candidates(*x.values(), **at))


def _sample_tokens(rng: np.random.Generator) -> Case:
    return Case("sample_tokens", "sample_tokens", _sampling(rng), {"rand_stream": ref.STREAM_TARGET},
                lambda x, at: (ref.sample_tokens(*x.values(), stream=at["rand_stream"]),))


def _top_k_top_p_probs(rng: np.random.Generator) -> Case:
    a = _sampling(rng)
    arrays = {n: a[n] for n in ("probs", "top_p", "top_k", "batch_id_per_token_output")}
    return Case("top_k_top_p_probs", "top_k_top_p_probs", arrays, {},
                lambda x, at: (ref.top_k_top_p_probs(*x.values()),))


VERIFY_POSITIONAL = ("accept_tokens", "accept_num", "draft_tokens", "target_tokens", "candidate_ids",
                     "candidate_scores", "candidate_lens", "seed", "step_idx", "stop_flags", "is_block_step",
                     "seq_lens_encoder", "seq_lens_this_time", "cu_seqlens_q_output", "reasoning_status",
                     "max_dec_len", "end_tokens")


def _verify(rng: np.random.Generator, strategy: str) -> Case:
    drafts = np.array([3, 1, 0, 2])  # drafts per decode slot
    b, k, vocab, kc = len(drafts), 3, 50, 4
    this_time = (1 + drafts).astype(np.int32)
    cu = np.concatenate([[0], np.cumsum(this_time)]).astype(np.int32)
    draft_tokens = np.full((b, k + 1), -1, np.int64)
    draft_tokens[:, 0] = rng.integers(0, vocab, b)
    targets = rng.integers(0, vocab, int(cu[-1])).astype(np.int64)
    for i, n in enumerate(drafts):
        draft_tokens[i, 1 : 1 + n] = rng.integers(0, vocab, n)
        agree = int(rng.integers(0, n + 1))  # the first `agree` drafts match the target
        targets[cu[i] : cu[i] + agree] = draft_tokens[i, 1 : 1 + agree]
    arrays = {
        "accept_tokens": np.zeros((b, k + 1), np.int64), "accept_num": np.zeros(b, np.int32),
        "draft_tokens": draft_tokens,
        "seed": rng.integers(0, 2**62, b).astype(np.int64), "step_idx": rng.integers(0, 40, b).astype(np.int64),
        "stop_flags": np.zeros(b, np.bool_), "is_block_step": np.zeros(b, np.bool_),
        "seq_lens_encoder": np.zeros(b, np.int32), "seq_lens_this_time": this_time, "cu_seqlens_q_output": cu,
        "max_dec_len": np.full(b, 1000, np.int64), "end_tokens": np.array([vocab - 1], np.int64),
    }
    if strategy == "topp":
        ids = rng.integers(0, vocab, (len(targets), kc)).astype(np.int64)
        ids[:, 0] = targets
        scores = np.sort(rng.random((len(targets), kc)).astype(np.float32), axis=1)[:, ::-1]
        arrays.update(candidate_ids=ids, candidate_scores=np.ascontiguousarray(scores),
                      candidate_lens=rng.integers(1, kc + 1, len(targets)).astype(np.int32))
    elif strategy in PROBABILITY_STRATEGIES:
        arrays.update(target_probs=_softmax(rng, len(targets), vocab), draft_probs=_softmax(rng, len(targets), vocab))
    else:
        arrays["target_tokens"] = targets

    def reference(a: dict[str, np.ndarray], at: dict[str, Any]) -> tuple[np.ndarray, ...]:
        return ref.verify_draft_tokens(*(a.get(n) for n in VERIFY_POSITIONAL), target_probs=a.get("target_probs"),
                                       draft_probs=a.get("draft_probs"), **at)

    return Case(f"verify_draft_tokens ({strategy})", "verify_draft_tokens", arrays, {"strategy": strategy}, reference)


def _update_model_status(rng: np.random.Generator) -> Case:
    b, k, length = 4, 3, 48
    prompt = np.array([10, 12, 8, 20], np.int64)
    step = np.array([5, 0, 30, 3], np.int64)
    accept_num = np.array([2, 1, 4, 0], np.int32)
    end = np.array([49], np.int64)
    accept_tokens = rng.integers(0, 48, (b, k + 1)).astype(np.int64)
    accept_tokens[0, 1] = end[0]  # slot 0 ends on its second accepted token; slot 3 is stopped
    arrays = {
        "seq_lens_encoder": np.array([0, 12, 0, 0], np.int32),
        "seq_lens_decoder": (prompt + step).astype(np.int32) * np.array([1, 0, 1, 1], np.int32),
        "seq_lens_this_time": np.array([3, 12, 4, 1], np.int32),
        "step_idx": step, "stop_flags": np.array([False, False, False, True]),
        "accept_tokens": accept_tokens, "accept_num": accept_num,
        "draft_tokens": rng.integers(0, 48, (b, k + 1)).astype(np.int64),
        "token_ids_all": rng.integers(0, 48, (b, length)).astype(np.int64),
        "prompt_lens": prompt, "is_block_step": np.zeros(b, np.bool_),
        "max_dec_len": np.array([100, 100, 32, 100], np.int64), "end_tokens": end,
    }
    return Case("update_model_status", "update_model_status", arrays, {},
                lambda a, at: ref.update_model_status(*a.values()))


def _adaptive(rng: np.random.Generator, op: str) -> Case:
    b, k = 6, 4
    acceptance = rng.random((b, k + 1)).astype(np.float32)
    acceptance[:, 0] = [1, 1, 1, 1, 0, 0]  # four slots decode
    acceptance[3, 1:] = 0.6  # a fresh request: ties with the prior's worth
    rates = np.array([0.3, 0.7, 0.8, 0.12, 0.6], np.float32)
    if op == "adaptive_plan":
        rows = np.arange(1, b * (k + 2) + 1)
        arrays = {
            "acceptance": acceptance, "found": np.array([1, 0.5, 1, 0.75, 1, 1], np.float32),
            "step_cost": (1e-3 + 4e-5 * rows * (1 + (rows > 10))).astype(np.float32), "rates": rates,
            "seq_lens_encoder": np.array([0, 0, 0, 0, 9, 0], np.int32), "stop_flags": np.zeros(b, np.bool_),
            "is_block_step": np.zeros(b, np.bool_), "probe_step": np.array([6], np.int64),
            "draft_token_num": np.zeros(b, np.int32), "worth": np.zeros((b, k + 1), np.float32),
            "ranking": np.zeros((b, k + 1), np.int32),
        }
        attrs = {"probe_interval": 4}
    else:
        rows = np.array([4, 1, 3, 5, 1, 0])  # slot 1 planned drafts and found none; slot 4 prefilled
        arrays = {
            "acceptance": acceptance, "found": rng.random(b).astype(np.float32),
            "draft_token_num": np.array([3, 2, 2, 4, 0, 0], np.int32),
            "cu_seqlens_q_output": np.concatenate([[0], np.cumsum(rows)]).astype(np.int32),
            "accept_num": np.array([2, 1, 3, 1, 1, 0], np.int32), "rates": rates,
        }
        attrs = {}
    return Case(op, op, arrays, attrs, lambda a, at: getattr(ref, op)(*a.values(), **at))


def _build_draft_tree(rng: np.random.Generator) -> Case:
    b, depth, k, n = 4, 3, 3, 8  # EAGLE-2's layout: k candidates per depth, each continuing one of the last k
    parents = np.full((b, depth * k), -1, np.int32)
    parents[:, k:] = (np.arange(depth * k)[k:] // k - 1) * k + rng.integers(0, k, (b, (depth - 1) * k))
    scores = -np.cumsum(rng.random((b, depth * k)), axis=1).astype(np.float32)  # a child scores below its parent
    arrays = {
        "candidate_tokens": rng.integers(0, 50, (b, depth * k)).astype(np.int64), "candidate_parents": parents,
        "candidate_scores": scores, "draft_tree_tokens": rng.integers(0, 50, (b, n)).astype(np.int64),
        "seq_lens_this_time": np.array([1, 1, 9, 0], np.int32), "seq_lens_encoder": np.array([0, 0, 9, 0], np.int32),
        "seq_lens_decoder": np.array([20, 7, 0, 0], np.int32),  # two decode slots, a prefill, an inactive one
    }
    return Case("build_draft_tree", "build_draft_tree", arrays, {"max_depth": depth},
                lambda a, at: ref.build_draft_tree(**a, **at))


def _verify_draft_tree(rng: np.random.Generator) -> Case:
    b, k, vocab = 3, 3, 50
    tokens = rng.integers(0, vocab, (b, 6)).astype(np.int64)
    parents = np.tile(np.array([-1, 0, 0, 1, 2, 4], np.int32), (b, 1))  # two branches, depth 3
    this_time = np.array([6, 4, 1], np.int32)
    cu = np.concatenate([[0], np.cumsum(this_time)]).astype(np.int32)
    targets = rng.integers(0, vocab, int(cu[-1])).astype(np.int64)
    targets[[0, 2, 4]] = tokens[0, [2, 4, 5]]  # slot 0 walks 0 -> 2 -> 4 -> 5
    targets[cu[1]] = tokens[1, 1]  # slot 1 accepts one node
    arrays = {
        "accept_tokens": np.zeros((b, k + 1), np.int64), "accept_num": np.zeros(b, np.int32),
        "draft_tree_tokens": tokens, "draft_tree_parents": parents, "target_tokens": targets,
        "step_idx": rng.integers(0, 40, b).astype(np.int64), "stop_flags": np.zeros(b, np.bool_),
        "is_block_step": np.zeros(b, np.bool_), "seq_lens_encoder": np.zeros(b, np.int32),
        "seq_lens_this_time": this_time, "cu_seqlens_q_output": cu, "max_dec_len": np.full(b, 1000, np.int64),
        "end_tokens": np.array([vocab], np.int64),
    }
    return Case("verify_draft_tree", "verify_draft_tree", arrays, {"strategy": "greedy"},
                lambda a, at: ref.verify_draft_tree(**a, seed=None, **at))


def _apply_token_bitmask(rng: np.random.Generator) -> Case:
    rows, vocab, masks = 6, 100, 3
    words = (vocab + 31) // 32
    arrays = {
        "logits": rng.normal(0.0, 2.0, (rows, vocab)).astype(np.float32),
        "token_bitmask": rng.integers(-2**31, 2**31, (masks, words), dtype=np.int64).astype(np.int32),
        "bitmask_index": np.array([0, -1, 2, 1, 7, 0], np.int32),  # row 1 free, row 4 outside the masks: untouched
    }
    return Case("apply_token_bitmask", "apply_token_bitmask", arrays, {},
                lambda a, at: ref.apply_token_bitmask(**a))


def cases(seed: int = 0) -> list[Case]:
    """Every op once (verify once per strategy), on inputs drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    return [_ngram(rng, "ngram_match"), _ngram(rng, "ngram_append"), _top_p_candidates(rng), _sample_tokens(rng),
            _top_k_top_p_probs(rng), *(_verify(rng, s) for s in STRATEGIES),
            _update_model_status(rng), _adaptive(rng, "adaptive_plan"), _adaptive(rng, "adaptive_observe"),
            _build_draft_tree(rng), _verify_draft_tree(rng), _apply_token_bitmask(rng)]

"""Reference ``verify_draft_tokens``: the rules of docs/ops/verify_draft_tokens.md, literally, one slot at a time."""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from fastspec.reference.mass import draw, prob_mass
from fastspec.reference.rng import STREAM_TOPP, rand64

STRATEGIES = ("topp", "greedy", "target_match", "rejection", "block")


def _wrap64(x: int) -> int:
    """x as a signed 64-bit integer (two's complement wrap)."""
    return ((x + (1 << 63)) % (1 << 64)) - (1 << 63)


def _flat(x: np.ndarray | None) -> np.ndarray | None:
    return None if x is None else np.asarray(x).reshape(-1)


class SlotInputs(NamedTuple):
    """The per-slot inputs every verification (chain or tree) reads, flattened."""

    seed: np.ndarray | None  # [B] int64
    step_idx: np.ndarray  # [B] int64
    stop_flags: np.ndarray  # [B] bool
    is_block_step: np.ndarray  # [B] bool
    seq_lens_encoder: np.ndarray  # [B] int32
    seq_lens_this_time: np.ndarray  # [B] int32
    cu_seqlens_q_output: np.ndarray  # [B + 1] int32
    reasoning_status: np.ndarray | None  # [B] int32
    max_dec_len: np.ndarray  # [B] int64
    end_tokens: list[int]

    @classmethod
    def of(cls, seed, step_idx, stop_flags, is_block_step, seq_lens_encoder, seq_lens_this_time,
           cu_seqlens_q_output, reasoning_status, max_dec_len, end_tokens) -> "SlotInputs":
        """The inputs in the ops' order (``verify_draft_tree`` has no ``reasoning_status``: pass None)."""
        flat = [_flat(x) for x in (seed, step_idx, stop_flags, is_block_step, seq_lens_encoder,
                                   seq_lens_this_time, cu_seqlens_q_output, reasoning_status, max_dec_len)]
        return cls(*flat, [int(e) for e in _flat(end_tokens)])

    def judged_rows(self, b: int, rows: int) -> tuple[bool, int, int] | None:
        """``(prefill, need, first)`` of slot ``b``: its target rows are ``first .. first + need - 1``; None for
        a slot that emits nothing this step (stopped, blocked, idle, or its rows outside the ``rows`` given)."""
        if self.stop_flags[b] or self.is_block_step[b]:
            return None
        enc, this_time = self.seq_lens_encoder[b], self.seq_lens_this_time[b]
        prefill = enc > 0
        if not prefill and not (enc == 0 and this_time >= 1):
            return None
        need = 1 if prefill else int(this_time)
        first, end = int(self.cu_seqlens_q_output[b]), int(self.cu_seqlens_q_output[b + 1])
        if first < 0 or end > rows or end - first < need:
            return None
        return bool(prefill), need, first

    def emit(self, b: int, emitted: list[int], token: int) -> bool:
        """Appends ``token`` to slot ``b``'s ``emitted`` (``end_tokens[0]`` in its place once ``max_dec_len`` is
        reached without an end token); True when the slot has finished."""
        cur = _wrap64(int(self.step_idx[b]) + len(emitted) + 1)  # 64-bit arithmetic, like the kernels
        is_end = token in self.end_tokens
        emitted.append(self.end_tokens[0] if cur >= self.max_dec_len[b] and not is_end else token)
        return is_end or cur >= self.max_dec_len[b]


def verify_draft_tokens(
    accept_tokens: np.ndarray,
    accept_num: np.ndarray,
    draft_tokens: np.ndarray,
    target_tokens: np.ndarray | None,
    candidate_ids: np.ndarray | None,
    candidate_scores: np.ndarray | None,
    candidate_lens: np.ndarray | None,
    seed: np.ndarray,
    step_idx: np.ndarray,
    stop_flags: np.ndarray,
    is_block_step: np.ndarray,
    seq_lens_encoder: np.ndarray,
    seq_lens_this_time: np.ndarray,
    cu_seqlens_q_output: np.ndarray,
    reasoning_status: np.ndarray | None,
    max_dec_len: np.ndarray,
    end_tokens: np.ndarray,
    *,
    strategy: str,
    accept_all: bool = False,
    reject_all: bool = False,
    target_probs: np.ndarray | None = None,
    draft_probs: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Returns updated copies of ``(accept_tokens, accept_num)`` (inputs are not modified).

    Strategies "rejection" and "block" take ``target_probs`` and ``draft_probs`` ``[T, V]`` (see
    ``fastspec.reference.rejection`` and ``fastspec.reference.block``)."""
    strategy = strategy.lower()
    if strategy not in STRATEGIES:
        raise ValueError(f"verify_draft_tokens: unknown strategy {strategy!r}")
    slots = SlotInputs.of(seed, step_idx, stop_flags, is_block_step, seq_lens_encoder, seq_lens_this_time,
                          cu_seqlens_q_output, reasoning_status, max_dec_len, end_tokens)
    if strategy in ("rejection", "block"):
        from fastspec.reference.block import block_rules
        from fastspec.reference.rejection import rejection_rules
        from fastspec.reference.sampling import as_f32_probs

        target, draft = as_f32_probs(target_probs), as_f32_probs(draft_probs)  # f16, bf16 bits: widened exactly
        rules = (rejection_rules(target, draft, slots.seed) if strategy == "rejection"
                 else block_rules(target, draft, draft_tokens, slots, accept_all))
        return verify_slots(accept_tokens, accept_num, draft_tokens, slots, rows=target.shape[0],
                            accept_all=accept_all, reject_all=reject_all, **rules)
    targets, lens = _flat(target_tokens), _flat(candidate_lens)
    if strategy == "topp":
        rows, k_cand = np.asarray(candidate_ids).shape
    else:
        rows = len(targets)

    def candidate_len(t: int) -> int:
        return min(max(int(lens[t]), 0), k_cand)

    def accepts(b: int, t: int, position: int, d: int) -> bool:
        if strategy == "topp":
            return d in [int(c) for c in candidate_ids[t, : candidate_len(t)]]
        return d == int(targets[t])

    def correction(b: int, t: int, position: int, rejected: bool) -> int | None:
        if strategy != "topp":
            return int(targets[t])
        n = candidate_len(t)
        if n == 0:
            return None
        masses = prob_mass(np.asarray(candidate_scores[t, :n], dtype=np.float32))
        return int(candidate_ids[t, draw(masses, rand64(int(slots.seed[b]), position, STREAM_TOPP))])

    return verify_slots(accept_tokens, accept_num, draft_tokens, slots, rows=rows, accept_all=accept_all,
                        reject_all=reject_all, accepts=accepts, correction=correction)


def verify_slots(
    accept_tokens: np.ndarray,
    accept_num: np.ndarray,
    draft_tokens: np.ndarray,
    slots: SlotInputs,
    *,
    rows: int,
    accept_all: bool,
    reject_all: bool,
    accepts: Callable[[int, int, int, int], bool] | None,
    correction: Callable[[int, int, int, bool], int | None],
    decide: Callable[[int, int, int], int] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The slot walk every strategy shares (docs/ops/verify_draft_tokens.md, steps 1-3); returns updated copies.

    A strategy supplies ``accepts(b, row, position, draft)`` (drafts < 0 and ``accept_all``
    are handled here) and ``correction(b, row, position, rejected)``, the token at the first
    non-accepted position; ``None`` or a token < 0 emits ``end_tokens[0]``. A strategy that judges
    the drafts as one block supplies ``decide(b, first_row, drafts)`` instead of ``accepts``: how
    many of the slot's ``drafts`` it accepts (not called under ``accept_all`` or when no draft is judged).
    """
    accept_tokens = np.array(accept_tokens, dtype=np.int64, copy=True)
    accept_num = np.array(accept_num, dtype=np.int32, copy=True)
    out, num = accept_tokens, accept_num.reshape(-1)
    reasoning, ends = slots.reasoning_status, slots.end_tokens
    batch, cols = out.shape

    for b in range(batch):
        out[b, :] = -1
        num[b] = 0
        judged = slots.judged_rows(b, rows)
        if judged is None:
            continue
        prefill, need, first = judged
        skip = prefill or reject_all or (reasoning is not None and reasoning[b] == 1)
        drafts = 0 if skip else min(need - 1, cols - 1)
        step, emitted = int(slots.step_idx[b]), []
        ended, rejected, i = False, False, 0
        decided = decide(b, first, drafts) if decide is not None and drafts > 0 and not accept_all else None
        while i < drafts:
            d = int(draft_tokens[b, i + 1])
            ok = i < decided if decided is not None else accept_all or accepts(b, first + i, _wrap64(step + i), d)
            if not (d >= 0 and ok):
                rejected = True
                break
            if slots.emit(b, emitted, d):
                ended = True
                break
            i += 1
        if not ended:
            token = correction(b, first + i, _wrap64(step + i), rejected)
            slots.emit(b, emitted, ends[0] if token is None or token < 0 else token)
        out[b, : len(emitted)] = emitted
        num[b] = len(emitted)
    return accept_tokens, accept_num


def with_probabilities(strategy: str) -> Callable[..., tuple[np.ndarray, np.ndarray]]:
    """``verify_draft_tokens`` for a strategy that reads probabilities, taking ``target_probs`` and
    ``draft_probs`` in place of ``target_tokens`` and the candidates (``tests/rejection_cases.ARRAY_NAMES``)."""

    def verify(accept_tokens, accept_num, draft_tokens, target_probs, draft_probs, *slot_inputs, **attrs):
        return verify_draft_tokens(accept_tokens, accept_num, draft_tokens, None, None, None, None, *slot_inputs,
                                   strategy=strategy, target_probs=target_probs, draft_probs=draft_probs, **attrs)

    verify.__name__ = verify.__qualname__ = f"verify_{strategy}"
    verify.__doc__ = (f"``verify_draft_tokens`` with strategy {strategy.upper()}: ``(accept_tokens, accept_num, "
                      "draft_tokens, target_probs, draft_probs, seed, ..., end_tokens, *, accept_all, reject_all)``; "
                      "the probabilities are ``[T, V]`` f32, f16 or bf16 as uint16 bits, row ``r(i)`` of both "
                      "scoring draft ``i``. Returns updated copies of ``(accept_tokens, accept_num)``.")
    return verify

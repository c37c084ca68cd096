"""What every verification (chain or tree, any strategy) shares: the per-slot inputs, the slot walk
of docs/ops/verify_draft_tokens.md (steps 1-3), and the call shape of the strategies that read
probabilities. ``verify``, ``rejection``, ``block`` and ``trees`` import it; it imports none of them."""

from __future__ import annotations

from typing import Callable, Iterator, Mapping, NamedTuple

import numpy as np

from fastspec.reference.sampling import as_f32_probs


def wrap64(x: int) -> int:
    """x as a signed 64-bit integer (two's complement wrap), as the kernels' int64 arithmetic gives it."""
    return ((x + (1 << 63)) % (1 << 64)) - (1 << 63)


def flat(x: np.ndarray | None) -> np.ndarray | None:
    """``x`` as a 1-D array (None stays None)."""
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
    def of(cls, args: Mapping[str, object]) -> "SlotInputs":
        """The slot inputs taken by name from an op's arguments (``verify_draft_tree`` has no
        ``reasoning_status``: None)."""
        *arrays, end_tokens = cls._fields
        return cls(*(flat(args.get(name)) for name in arrays), [int(e) for e in flat(args[end_tokens])])

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

    def judged_slots(self, out: np.ndarray, num: np.ndarray, rows: int) -> Iterator[tuple[int, bool, int, int]]:
        """``(b, prefill, need, first)`` of each slot that emits this step (see ``judged_rows``); every slot's
        outputs (``out[b]``, ``num[b]``) are cleared first, so a slot passed over emits nothing."""
        for b in range(out.shape[0]):
            out[b, :] = -1
            num[b] = 0
            judged = self.judged_rows(b, rows)
            if judged is not None:
                yield b, *judged

    def emit(self, b: int, emitted: list[int], token: int) -> bool:
        """Appends ``token`` to slot ``b``'s ``emitted`` (``end_tokens[0]`` in its place once ``max_dec_len`` is
        reached without an end token); True when the slot has finished."""
        cur = wrap64(int(self.step_idx[b]) + len(emitted) + 1)  # 64-bit arithmetic, like the kernels
        is_end = token in self.end_tokens
        emitted.append(self.end_tokens[0] if cur >= self.max_dec_len[b] and not is_end else token)
        return is_end or cur >= self.max_dec_len[b]


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
    cols = out.shape[1]

    for b, prefill, need, first in slots.judged_slots(out, num, rows):
        skip = prefill or reject_all or (reasoning is not None and reasoning[b] == 1)
        drafts = 0 if skip else min(need - 1, cols - 1)
        step, emitted = int(slots.step_idx[b]), []
        ended, rejected, i = False, False, 0
        decided = decide(b, first, drafts) if decide is not None and drafts > 0 and not accept_all else None
        while i < drafts:
            d = int(draft_tokens[b, i + 1])
            ok = i < decided if decided is not None else accept_all or accepts(b, first + i, wrap64(step + i), d)
            if not (d >= 0 and ok):
                rejected = True
                break
            if slots.emit(b, emitted, d):
                ended = True
                break
            i += 1
        if not ended:
            token = correction(b, first + i, wrap64(step + i), rejected)
            slots.emit(b, emitted, ends[0] if token is None or token < 0 else token)
        out[b, : len(emitted)] = emitted
        num[b] = len(emitted)
    return accept_tokens, accept_num


# A strategy's hooks for ``verify_slots`` from the widened target and draft probabilities [T, V], the
# draft tokens, the slots and ``accept_all``.
Rules = Callable[[np.ndarray, np.ndarray, np.ndarray, SlotInputs, bool], dict]


def verify_probabilities(rules: Rules, args: Mapping[str, object]) -> tuple[np.ndarray, np.ndarray]:
    """The slot walk of a strategy that reads probabilities, with its ``rules``, the call's arguments taken by
    name from ``args`` (``target_probs`` and ``draft_probs`` in place of ``target_tokens`` and the candidates)."""
    slots = SlotInputs.of(args)
    target, draft = as_f32_probs(args["target_probs"]), as_f32_probs(args["draft_probs"])  # f16, bf16: widened exactly
    accept_all, draft_tokens = bool(args["accept_all"]), args["draft_tokens"]
    return verify_slots(
        args["accept_tokens"],
        args["accept_num"],
        draft_tokens,
        slots,
        rows=target.shape[0],
        accept_all=accept_all,
        reject_all=bool(args["reject_all"]),
        **rules(target, draft, draft_tokens, slots, accept_all),
    )


def probability_strategy(strategy: str, rules: Rules) -> Callable[..., tuple[np.ndarray, np.ndarray]]:
    """``verify_draft_tokens`` for a strategy that reads probabilities, taking ``target_probs`` and
    ``draft_probs`` in place of ``target_tokens`` and the candidates (``tests/rejection_cases.ARRAY_NAMES``)."""

    def verify(
        accept_tokens,
        accept_num,
        draft_tokens,
        target_probs,
        draft_probs,
        seed,
        step_idx,
        stop_flags,
        is_block_step,
        seq_lens_encoder,
        seq_lens_this_time,
        cu_seqlens_q_output,
        reasoning_status,
        max_dec_len,
        end_tokens,
        *,
        accept_all: bool = False,
        reject_all: bool = False,
    ):
        return verify_probabilities(rules, locals())

    verify.__name__ = verify.__qualname__ = f"verify_{strategy}"
    verify.__doc__ = (
        f"``verify_draft_tokens`` with strategy {strategy.upper()}: ``(accept_tokens, accept_num, "
        "draft_tokens, target_probs, draft_probs, seed, ..., end_tokens, *, accept_all, reject_all)``; "
        "the probabilities are ``[T, V]`` f32, f16 or bf16 as uint16 bits, row ``r(i)`` of both "
        "scoring draft ``i``. Returns updated copies of ``(accept_tokens, accept_num)``."
    )
    return verify

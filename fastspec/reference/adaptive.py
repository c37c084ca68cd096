"""Reference ``adaptive_plan`` and ``adaptive_observe``: the draft-length controller's two steps
(docs/ops/adaptive.md), in float32 and in the order of operations every backend follows."""

from __future__ import annotations

import numpy as np

from fastspec.core import rates as core_rates
from fastspec.core.rates import KEEP_TRIED, KEEP_UNTRIED, LEARNING_RATE, PRIOR, RELAX_SHIFT

F32 = np.float32
TIE_BREAK = F32(2.0**-22)  # per slot: above float32's step near 1, far below any difference that matters


def controller_rates(learning_rate: float, relax_rate: float, prior: float) -> np.ndarray:
    """``rates [5] float32``: learning_rate, 1 - learning_rate, 1 - relax_rate, relax_rate * prior, prior."""
    return np.array(core_rates.controller_rates(learning_rate, relax_rate, prior), dtype=F32)


def _wrap_increment(value: int) -> int:
    return (int(value) + 1 + 2**63) % 2**64 - 2**63


@np.errstate(invalid="ignore", divide="ignore", over="ignore")
def adaptive_plan(
    acceptance,
    found,
    step_cost,
    rates,
    seq_lens_encoder,
    stop_flags,
    is_block_step,
    probe_step,
    draft_token_num,
    worth,
    ranking,
    probe_interval: int = 0,
) -> tuple[np.ndarray, ...]:
    """Returns new ``probe_step``, ``draft_token_num``, ``worth``, ``ranking`` (shapes as given)."""
    acceptance = np.asarray(acceptance, dtype=F32)
    b, cols = acceptance.shape
    found = np.asarray(found, dtype=F32).reshape(-1)
    step_cost = np.asarray(step_cost, dtype=F32).reshape(-1)
    step = _wrap_increment(np.asarray(probe_step).reshape(-1)[0])

    estimates = acceptance.copy()
    if probe_interval > 0:  # slot b probes when b = step (mod interval): draft 1 worth at least the prior
        probe = np.zeros_like(estimates)
        probe[np.arange(b) % probe_interval == step % probe_interval, 1] = F32(rates[PRIOR])
        estimates = np.where(estimates > probe, estimates, probe)  # "a > p ? a : p" (NaN gives way)
    tie = np.arange(b, dtype=F32)[:, None] * -TIE_BREAK
    new_worth = (np.multiply.accumulate(estimates, axis=1, dtype=F32) + tie).astype(F32)
    rows = np.concatenate([np.ones((b, 1), F32), np.repeat(found[:, None], cols - 1, axis=1)], axis=1)

    flat = new_worth.reshape(-1)
    key = np.where(np.isnan(flat), -np.inf, flat).astype(F32)
    order = np.lexsort((np.arange(flat.size), -key))  # worth descending (NaN last), ties by index
    ranked, ranked_rows = flat[order], rows.reshape(-1)[order]

    enc = np.asarray(seq_lens_encoder).reshape(-1)
    running = ~(np.asarray(stop_flags).reshape(-1) | np.asarray(is_block_step).reshape(-1))
    prefill = F32(np.count_nonzero(running & (enc > 0)))
    step_rows = np.rint(np.add.accumulate(ranked_rows, dtype=F32) + prefill)  # half to even, as rintf
    position = np.where(
        step_rows >= len(step_cost), len(step_cost) - 1, np.where(step_rows >= 1, step_rows - 1, 0)
    ).astype(np.int64)  # NaN: 0
    tokens = np.add.accumulate((ranked * ranked_rows).astype(F32), dtype=F32) + prefill
    rate = (tokens / step_cost[position]).astype(F32)
    best = int(np.argmax(np.where(np.isnan(rate), -np.inf, rate)))  # the first of the largest
    threshold = ranked[best]

    drafts = np.count_nonzero(new_worth[:, 1:] >= threshold, axis=1).astype(np.int32)
    return (
        np.full_like(np.asarray(probe_step), step),
        drafts.reshape(np.shape(draft_token_num)),
        new_worth.reshape(np.shape(worth)),
        order.astype(np.int32).reshape(np.shape(ranking)),
    )


def update_table(k: int, rates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``scale, shift [(K + 2)^2 + 1, K + 1] float32``: row ``rows * (K + 2) + accept_num`` is the update
    ``estimate * scale + shift`` of a slot that had ``rows`` output rows (1 + drafts offered) and kept
    ``accept_num`` tokens; the last row that of a slot that planned drafts and got none."""
    scale = np.ones(((k + 2) ** 2 + 1, k + 1), dtype=F32)
    shift = np.zeros_like(scale)
    scale[-1, 0], shift[-1, 0] = 0, 1  # it decodes next step, nothing else learnt
    for rows in range(k + 2):
        offered = max(rows - 1, 0)
        for kept in range(k + 2):
            accepted = min(max(kept - 1, 0), offered)
            row = rows * (k + 2) + kept
            if rows > 0:  # it ran this step: it decodes next step
                scale[row, 0], shift[row, 0] = 0, 1
            for i in range(1, k + 1):
                if i <= offered and i <= accepted + 1:  # tried: accepted or the first rejected
                    scale[row, i] = rates[KEEP_TRIED]
                    shift[row, i] = rates[LEARNING_RATE] if i <= accepted else 0
                elif i > offered:  # not offered: relaxes toward the prior
                    scale[row, i], shift[row, i] = rates[KEEP_UNTRIED], rates[RELAX_SHIFT]
    return scale, shift


@np.errstate(invalid="ignore", divide="ignore", over="ignore")
def adaptive_observe(
    acceptance, found, draft_token_num, cu_seqlens_q_output, accept_num, rates
) -> tuple[np.ndarray, np.ndarray]:
    """Returns new ``acceptance`` and ``found`` (shapes as given)."""
    acc = np.asarray(acceptance, dtype=F32)
    k = acc.shape[1] - 1
    old_found = np.asarray(found, dtype=F32).reshape(-1)
    cu = np.asarray(cu_seqlens_q_output).astype(np.int64)
    rows = cu[1:] - cu[:-1]
    index = np.clip(rows * (k + 2) + np.asarray(accept_num).reshape(-1).astype(np.int64), 0, (k + 2) ** 2 - 1)
    tried = (acc[:, 0] > 0) & (np.asarray(draft_token_num).reshape(-1) > 0)
    hit = rows > 1
    learnt = old_found + F32(rates[LEARNING_RATE]) * (hit.astype(F32) - old_found)
    new_found = np.where(tried, learnt, old_found).astype(F32)
    index = np.where(tried & ~hit, (k + 2) ** 2, index)  # drafts planned, none found: it only decodes
    scale, shift = update_table(k, np.asarray(rates, dtype=F32))
    new_acc = ((acc * scale[index]).astype(F32) + shift[index]).astype(F32)
    return new_acc, new_found.reshape(np.shape(found))

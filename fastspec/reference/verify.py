"""Reference ``verify_draft_tokens``: the rules of docs/ops/verify_draft_tokens.md, literally, one slot at a time."""

from __future__ import annotations

import numpy as np

from fastspec.core.streams import STREAM_TOPP
from fastspec.reference.block import block_rules
from fastspec.reference.mass import draw, prob_mass
from fastspec.reference.rejection import rejection_rules
from fastspec.reference.rng import rand64
from fastspec.reference.slots import SlotInputs, flat, verify_probabilities, verify_slots

STRATEGIES = ("topp", "greedy", "target_match", "rejection", "block")
PROBABILITY_RULES = {"rejection": rejection_rules, "block": block_rules}


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
    if strategy in PROBABILITY_RULES:
        return verify_probabilities(PROBABILITY_RULES[strategy], locals())
    slots = SlotInputs.of(locals())
    targets, lens = flat(target_tokens), flat(candidate_lens)
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

    return verify_slots(
        accept_tokens,
        accept_num,
        draft_tokens,
        slots,
        rows=rows,
        accept_all=accept_all,
        reject_all=reject_all,
        accepts=accepts,
        correction=correction,
    )

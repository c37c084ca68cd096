"""Reference REJECTION at one node of a draft tree: SpecInfer's multi-draft rejection (Miao et al., "SpecInfer",
ASPLOS 2024) in exact integer masses (docs/ops/draft_tree.md, "REJECTION at a node").

The node's children were drawn i.i.d. from ``q`` (its ``draft_probs`` row); ``p`` is its target row. The
children are tried in index order against a target ``t_k`` that starts as ``t_0 = mp`` (the masses of ``p``):
try ``k`` accepts child ``d`` iff ``mq(d) > 0`` and ``(rand64(seed, position, ACCEPT, k) * mq(d)) >> 64 <
t_k(d)``. A rejected try leaves the residual ``r_{k+1} = max(t_k - mq, 0)`` of total ``R_{k+1}`` and the
next target ``t_{k+1}(v) = mass_ratio(r_{k+1}(v), R_{k+1})`` (renormalised to ``2^40``). When every child is
rejected the correction is drawn from the last residual (stream RESAMPLE, ascending ids), or from ``p`` when
that residual is empty (then no further child is tried). Try 0 is the chain's REJECTION test with the chain's
coin and its correction is the chain's residual draw, so a chain verifies exactly as ``verify_draft_tokens``.
"""

from __future__ import annotations

import numpy as np

from fastspec.core.streams import STREAM_ACCEPT, STREAM_RESAMPLE
from fastspec.reference.block import mass_ratio
from fastspec.reference.mass import draw, prob_mass
from fastspec.reference.rejection import rejection_bonus
from fastspec.reference.rng import rand64


class NodeTries:
    """The tries at one node: ``accepts(d)`` for each child in index order, then ``correction()``."""

    def __init__(self, p_row: np.ndarray, q_row: np.ndarray, seed: int, position: int) -> None:
        self.p_row, self.seed, self.position = p_row, seed, position
        self.mq = prob_mass(np.asarray(q_row, dtype=np.float32))
        self.target = prob_mass(np.asarray(p_row, dtype=np.float32))  # t_0 = mp
        self.residual = self.target
        self.tries = 0
        self.empty = False  # a rejected try left no residual: no more tries, the correction comes from p

    def accepts(self, draft: int) -> bool:
        if self.empty:
            return False
        mq = int(self.mq[draft]) if 0 <= draft < len(self.mq) else 0
        if mq > 0:
            coin = rand64(self.seed, self.position, STREAM_ACCEPT, self.tries)
            if (coin * mq) >> 64 < int(self.target[draft]):
                return True
        self.residual = np.maximum(self.target - self.mq, 0)
        total = int(self.residual.sum())
        self.tries += 1
        self.empty = total == 0
        if not self.empty:
            self.target = np.array([mass_ratio(int(r), total) for r in self.residual], dtype=np.int64)
        return False

    def correction(self) -> int | None:
        """The token after every child was rejected (a draw from the residual), or at a leaf (a bonus draw
        from ``p``); None when the row has no target mass."""
        if self.tries and not self.empty:
            return draw(self.residual, rand64(self.seed, self.position, STREAM_RESAMPLE))
        return rejection_bonus(self.p_row, self.seed, self.position)


class NodeTargets:
    """GREEDY and TARGET_MATCH at one node: the child carrying the row's target is accepted, else the target
    is the correction."""

    def __init__(self, target: int) -> None:
        self.target = target

    def accepts(self, draft: int) -> bool:
        return draft >= 0 and draft == self.target

    def correction(self) -> int | None:
        return self.target

"""``DraftLengthController``: how many drafts each request verifies, step by step."""

from __future__ import annotations

import numpy as np
import paddle

from fastspec.runtime.adaptive.cost_model import StepCostModel
from fastspec.runtime.state import SpecState

MIN_STEP_SECONDS = 1e-9  # keeps the rate finite before a measured curve has data
TIE_BREAK = 2.0**-22  # per slot: above float32's step near 1, far below any difference that matters


class DraftLengthController:
    """Chooses ``state.draft_token_num`` per slot from the slot's acceptance history and a step cost.

    Per slot it keeps ``acceptance[b, 1..K]``, an estimate of P(draft i accepted | drafts before it
    accepted); the product over positions (``cumprod``) is the expected number of tokens draft ``i``
    adds. Column 0 is 1 while the slot decodes and 0 otherwise, so the products of a slot that is
    free or prefilling are 0. Before the proposer runs, ``plan`` picks the drafts that make the step
    pay best:

        candidates  every decoding slot's own token (worth 1) and its K drafts (worth cumprod)
        choose      the n best candidates, n maximising  expected tokens(n) / cost(n tokens)
        write       draft_token_num[b] = the drafts of slot b among them

    This is the best split of one step's tokens between requests: a draft is taken when its
    expected tokens pay for the time it adds to the step, at the step's own rate (equal estimates,
    as of fresh requests, are ordered by slot, so the split is exact). While the forward is
    memory-bound (batch 1) extra tokens are free and every draft with a chance is taken; once
    compute-bound (a large batch) a draft must be nearly certain. ``cost(n)`` comes from a
    ``fastspec.runtime.adaptive.cost_model`` (measured or roofline) as a table refreshed between steps.

    After the state update, ``observe`` folds the step into the estimates. A slot was offered
    ``rows - 1`` drafts, ``rows`` being its output rows (``cu_seqlens_q_output``, which the update
    leaves alone; the proposer may have found fewer drafts than planned), and accepted
    ``accept_num - 1``: a position tried moves ``learning_rate`` toward 1 (accepted) or 0 (the first
    rejected); a position not offered relaxes ``relax_rate`` toward the prior; a position offered
    behind a rejected draft learns nothing; a slot with rows (prefill or decode) decodes next step.
    Every (rows, accept_num) pair has its update precomputed, so observe is one table look-up and one
    multiply-add.

    Probing: every ``probe_interval`` steps each slot (staggered across slots) plans as if its first
    draft were sure, so a request that fell to 0 drafts is offered some again and, when the text
    turns copy-heavy, earns them back. Between probes, untried positions relaxing toward the prior
    bring drafts back wherever the step can afford them.

    ``plan`` and ``observe`` use device tensors only (no host read, no Python branch on a value), and
    every tensor is allocated once and updated in place, so they can sit in a captured step.
    ``reset_slot`` (a request enters or leaves a slot) and ``refresh_costs`` run on the host between
    steps.

    Args:
        max_num_seqs, num_speculative_tokens: the state's B and K.
        cost_model: seconds of one forward by tokens scored (``fastspec.runtime.adaptive.cost_model``).
        learning_rate: weight of one step's outcome in a tried position's estimate, in (0, 1].
        relax_rate: per step, how far an untried position's estimate moves toward ``prior``.
        prior: a new request's estimate of every position, in [0, 1].
        probe_interval: steps between two probes of a slot (0: no probes).
        place: where the tensors live (default: Paddle's current place).
    """

    def __init__(
        self,
        max_num_seqs: int,
        num_speculative_tokens: int,
        cost_model: StepCostModel,
        *,
        learning_rate: float = 0.3,
        relax_rate: float = 0.2,
        prior: float = 0.6,
        probe_interval: int = 16,
        place=None,
    ) -> None:
        b, k = int(max_num_seqs), int(num_speculative_tokens)
        if b < 1 or k < 1:
            raise ValueError(f"DraftLengthController: need max_num_seqs >= 1 and num_speculative_tokens >= 1, got {b}, {k}")
        self.max_num_seqs, self.num_speculative_tokens = b, k
        self.cost_model = cost_model
        self.probe_interval = int(probe_interval)
        self.place = place if place is not None else paddle.framework._current_expected_place()
        self._fresh = np.array([0.0] + [prior] * k, dtype=np.float32)  # not decoding yet
        self.acceptance = self._tensor(np.tile(self._fresh, (b, 1)))  # [B, K + 1]
        scale, shift = _update_tables(k, learning_rate, relax_rate, prior)
        self._scale, self._shift = self._tensor(scale), self._tensor(shift)  # [(K + 2)^2, K + 1]
        self._probe = self._tensor(_probe_ring(b, k, self.probe_interval))  # [R >= B, K + 1]
        self._cost = self._tensor(np.ones(b * (k + 1), dtype=np.float32))  # cost of 1 .. B (K + 1) tokens
        # equal estimates (fresh requests) must not tie: the threshold would take all of them
        self._tie_break = self._tensor(-TIE_BREAK * np.arange(b, dtype=np.float32)[:, None])  # [B, 1]
        self._cost_version: int | None = None
        self.refresh_costs()

    @classmethod
    def from_config(cls, config, max_num_seqs: int, cost_model: StepCostModel, place=None) -> DraftLengthController:
        """From a SpeculativeConfig's ``adaptive`` section (K = num_speculative_tokens)."""
        a = config.adaptive
        return cls(max_num_seqs, config.num_speculative_tokens, cost_model, learning_rate=a.learning_rate,
                   relax_rate=a.relax_rate, prior=a.prior, probe_interval=a.probe_interval, place=place)

    # -- between steps (host) ---------------------------------------------------------------

    def reset_slot(self, slot: int) -> None:
        """A request enters or leaves ``slot``: back to the prior, not decoding until its prefill ran."""
        self.acceptance[slot] = self._tensor(self._fresh)

    def refresh_costs(self) -> None:
        """Re-reads the cost curve into the device table when the cost model has changed."""
        if self._cost_version == self.cost_model.version:
            return
        tokens = np.arange(1, self._cost.shape[0] + 1)
        seconds = np.maximum(self.cost_model.seconds(tokens), MIN_STEP_SECONDS).astype(np.float32)
        paddle.assign(self._tensor(seconds), output=self._cost)
        self._cost_version = self.cost_model.version

    # -- in the step (device tensors only) --------------------------------------------------

    def plan(self, state: SpecState) -> None:
        """Writes ``state.draft_token_num`` (in place) for the coming proposal."""
        estimates = self.acceptance
        if self.probe_interval:  # a config constant, not a tensor value
            probe = paddle.roll(self._probe, 1, axis=0)
            paddle.assign(probe, output=self._probe)  # written once, never read back in the step
            estimates = paddle.maximum(estimates, probe[: self.max_num_seqs])
        worth = paddle.cumprod(estimates, dim=1) + self._tie_break
        ranked = paddle.sort(worth.reshape([-1]), descending=True)
        rate = paddle.cumsum(ranked) / self._cost  # expected tokens per second with the n best
        threshold = paddle.gather(ranked, paddle.argmax(rate))
        paddle.assign(paddle.sum(worth[:, 1:] >= threshold, axis=1, dtype="int32"), output=state.draft_token_num)

    def observe(self, state: SpecState) -> None:
        """After the state update: folds this step's rows and ``accept_num`` into the estimates."""
        k = self.num_speculative_tokens
        cu = state.cu_seqlens_q_output
        index = paddle.clip((cu[1:] - cu[:-1]) * (k + 2) + state.accept_num, 0, (k + 2) ** 2 - 1)
        # one in-place write: a static program may read a twice-written tensor as after its first write
        updated = self.acceptance * paddle.gather(self._scale, index) + paddle.gather(self._shift, index)
        paddle.assign(updated, output=self.acceptance)

    # -- inspection -------------------------------------------------------------------------

    def expected_tokens(self) -> np.ndarray:
        """``[B, K]``: the expected tokens draft i adds (host copy, for tests and reports)."""
        return paddle.cumprod(self.acceptance, dim=1).numpy()[:, 1:]

    def _tensor(self, array: np.ndarray) -> paddle.Tensor:
        return paddle.to_tensor(array, place=self.place)


def _update_tables(k: int, learning_rate: float, relax_rate: float, prior: float) -> tuple[np.ndarray, np.ndarray]:
    """``scale, shift [(K + 2)^2, K + 1]``: row ``rows * (K + 2) + accept_num`` is the update
    ``estimate * scale + shift`` of a slot that had ``rows`` output rows (1 + drafts offered; 1 for
    a prefill, 0 without rows) and kept ``accept_num`` tokens (accepted drafts + 1)."""
    scale = np.ones(((k + 2) ** 2, k + 1), dtype=np.float32)
    shift = np.zeros_like(scale)
    for rows in range(k + 2):
        offered = max(rows - 1, 0)
        for kept in range(k + 2):
            accepted = min(max(kept - 1, 0), offered)
            row = rows * (k + 2) + kept
            if rows > 0:  # it ran this step: it decodes next step (a leaving request is reset by the host)
                scale[row, 0], shift[row, 0] = 0.0, 1.0
            for i in range(1, k + 1):  # column i: draft i
                if i <= offered and i <= accepted + 1:  # tried: accepted or the first rejected
                    weight, target = learning_rate, float(i <= accepted)
                elif i > offered:
                    weight, target = relax_rate, prior
                else:  # behind a rejected draft: no news
                    weight, target = 0.0, 0.0
                scale[row, i] = 1.0 - weight
                shift[row, i] = weight * target
    return scale, shift


def _probe_ring(b: int, k: int, interval: int) -> np.ndarray:
    """``[R, K + 1]``, R the multiple of ``interval`` from B up: 1 in column 1 of every
    ``interval``-th row. Rolled one row per step, its first B rows mark each slot exactly once
    every ``interval`` steps, a 1/interval share of the slots at each step."""
    rows = -(-b // interval) * interval if interval else b
    ring = np.zeros((rows, k + 1), dtype=np.float32)
    if interval:
        ring[::interval, 1] = 1.0
    return ring

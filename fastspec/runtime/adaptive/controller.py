"""``DraftLengthController``: how many drafts each request verifies, step by step."""

from __future__ import annotations

import numpy as np
import paddle

from fastspec import ops
from fastspec.core.rates import controller_rates
from fastspec.core.schema import SCHEMAS
from fastspec.runtime.adaptive.cost_model import StepCostModel
from fastspec.runtime.state import SpecState

MIN_STEP_SECONDS = 1e-9  # keeps the rate finite before a measured curve has data


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
    ``fastspec.runtime.adaptive.cost_model`` (measured or roofline) as a table refreshed between
    steps. A prefilling slot adds one row and one token to the step and no draft.

    After the state update, ``observe`` folds the step into the estimates. A slot was offered
    ``rows - 1`` drafts, ``rows`` being its output rows (``cu_seqlens_q_output``, which the update
    leaves alone; the proposer may have found fewer drafts than planned), and accepted
    ``accept_num - 1``: a position tried moves ``learning_rate`` toward 1 (accepted) or 0 (the first
    rejected); a position not offered relaxes ``relax_rate`` toward the prior; a position offered
    behind a rejected draft learns nothing; a slot with rows (prefill or decode) decodes next step.
    A slot that planned drafts and got none from the proposer learns nothing about acceptance
    (it was not tried, nor did the controller choose to rest it). A slot's update is
    ``estimate * scale + shift`` per position, the pair chosen by its (rows, accept_num).

    Per slot it also learns ``found``, how often the proposer had the drafts planned (an n-gram
    finds none where the text has no match): the plan books each draft at ``found`` rows and
    ``found x worth`` tokens, so the rows of drafts that will not come go to drafts that will.

    Probing is paid for like any draft: every ``probe_interval`` steps each slot (staggered across
    slots) values its first draft at no less than ``prior``, what a new request is credited, and
    that draft still has to pass the step's rate. So a request that fell to 0 drafts is offered one
    again where a draft of that worth pays (and, when the text turned copy-heavy, earns the rest
    back), and never where it does not: at high load, where a verified draft costs nearly what a
    decode token does, nobody probes and the step runs as spec off would. Between probes, untried
    positions relax toward the prior, with the same test.

    ``plan`` and ``observe`` are one fastspec op each (``adaptive_plan``, ``adaptive_observe``;
    docs/ops/adaptive.md), bit-identical on every backend: device tensors only (no host read, no
    Python branch on a value), every tensor allocated once and updated in place, so they can sit
    in a captured or static step. ``reset_slot`` (a request enters or leaves a slot) and
    ``refresh_costs`` run on the host between steps.

    Args:
        max_num_seqs, num_speculative_tokens: the state's B and K.
        cost_model: seconds of one forward by tokens scored (``fastspec.runtime.adaptive.cost_model``).
        learning_rate: weight of one step's outcome in a tried position's estimate, in (0, 1].
        relax_rate: per step, how far an untried position's estimate moves toward ``prior``.
        prior: a new request's estimate of every position, in [0, 1]; also what a probe values
            draft 1 at.
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
            raise ValueError(
                f"DraftLengthController: need max_num_seqs >= 1 and num_speculative_tokens >= 1, got {b}, {k}"
            )
        self.max_num_seqs, self.num_speculative_tokens = b, k
        self.cost_model = cost_model
        self.probe_interval = int(probe_interval)
        self.place = place if place is not None else paddle.framework._current_expected_place()
        self._fresh = np.array([0.0] + [prior] * k, dtype=np.float32)  # not decoding yet
        self.acceptance = self._tensor(np.tile(self._fresh, (b, 1)))  # [B, K + 1]
        self.found = self._tensor(np.ones((b, 1), dtype=np.float32))  # P(the proposer finds planned drafts)
        rates = np.array(controller_rates(learning_rate, relax_rate, prior), np.float32)  # each rounded once
        self.rates = self._tensor(rates)  # [5]
        self._cost = self._tensor(np.ones(b * (k + 2), dtype=np.float32))  # cost of 1 .. B (K + 2) rows
        self._probe = self._tensor(np.zeros(1, dtype=np.int64))  # the probe schedule's step counter
        self._worth = self._tensor(np.zeros((b, k + 1), dtype=np.float32))  # the plan's workspace
        self._ranking = self._tensor(np.zeros((b, k + 1), dtype=np.int32))
        self._fresh_row, self._found_row = self._tensor(self._fresh), self._tensor(np.ones(1, dtype=np.float32))
        # the controller's own tensors by the adaptive ops' names for them (the other tensors are the state's)
        self._own = {
            "acceptance": self.acceptance,
            "found": self.found,
            "rates": self.rates,
            "step_cost": self._cost,
            "probe_step": self._probe,
            "worth": self._worth,
            "ranking": self._ranking,
        }
        self._cost_version: int | None = None
        self.refresh_costs()

    @classmethod
    def from_config(cls, config, max_num_seqs: int, cost_model: StepCostModel, place=None) -> DraftLengthController:
        """From a SpeculativeConfig's ``adaptive`` section (K = num_speculative_tokens)."""
        a = config.adaptive
        return cls(
            max_num_seqs,
            config.num_speculative_tokens,
            cost_model,
            learning_rate=a.learning_rate,
            relax_rate=a.relax_rate,
            prior=a.prior,
            probe_interval=a.probe_interval,
            place=place,
        )

    # -- between steps (host) ---------------------------------------------------------------

    def reset_slot(self, slot: int) -> None:
        """A request enters or leaves ``slot``: back to the prior, not decoding until its prefill ran."""
        self.acceptance[slot] = self._fresh_row  # copied in: built once (a tensor built per call costs memory)
        self.found[slot] = self._found_row

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
        ops.adaptive_plan(*self.plan_tensors(state), probe_interval=self.probe_interval)

    def observe(self, state: SpecState) -> None:
        """After the state update: folds this step's rows and ``accept_num`` into the estimates."""
        ops.adaptive_observe(*self.observe_tensors(state))

    def plan_tensors(self, state: SpecState) -> tuple[paddle.Tensor, ...]:
        """adaptive_plan's tensors in its order: the controller's and ``state``'s."""
        return self._tensors("adaptive_plan", state)

    def observe_tensors(self, state: SpecState) -> tuple[paddle.Tensor, ...]:
        """adaptive_observe's tensors in its order."""
        return self._tensors("adaptive_observe", state)

    def _tensors(self, op_name: str, state: SpecState) -> tuple[paddle.Tensor, ...]:
        """The op's tensors in the schema's order, each the controller's own or else the state's of that name."""
        return tuple(self._own[n] if n in self._own else getattr(state, n) for n in SCHEMAS[op_name].input_names)

    # -- inspection -------------------------------------------------------------------------

    def expected_tokens(self) -> np.ndarray:
        """``[B, K]``: the expected tokens draft i adds (host copy, for tests and reports)."""
        return paddle.cumprod(self.acceptance, dim=1).numpy()[:, 1:]

    def _tensor(self, array: np.ndarray) -> paddle.Tensor:
        return paddle.to_tensor(array, place=self.place)

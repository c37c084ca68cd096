"""``AcceptanceTrace``: what each request was offered and accepted at every step of a run.

Pass one to ``generate(..., trace=AcceptanceTrace())``; after the run ``trace.steps`` holds one
``StepRecord`` per step. A trace replayed through a step cost model (``simulated_seconds``) gives
the time the same steps would take on the target that model describes: measured acceptance,
simulated time (bench/bench_adaptive.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fastspec.runtime.adaptive.cost_model import StepCostModel


@dataclass
class StepRecord:
    """One step: the output rows the target scored, and per request taking part (same order in
    every list) whether it decoded (False: its prefill), the drafts it was offered, the drafts
    it accepted and the tokens it kept (accepted drafts + the target's own token)."""

    rows: int
    requests: list = field(default_factory=list)
    decode: list = field(default_factory=list)
    offered: list = field(default_factory=list)
    accepted: list = field(default_factory=list)
    kept: list = field(default_factory=list)

    def add(self, request: int, decode: bool, offered: int, accepted: int, kept: int) -> None:
        self.requests.append(request)
        self.decode.append(decode)
        self.offered.append(offered)
        self.accepted.append(accepted)
        self.kept.append(kept)


class AcceptanceTrace:
    """The steps of one ``generate`` run, in order."""

    def __init__(self) -> None:
        self.steps: list[StepRecord] = []

    def record(self, step: StepRecord) -> None:
        self.steps.append(step)

    @property
    def tokens(self) -> int:
        """Tokens generated over the run."""
        return sum(sum(s.kept) for s in self.steps)

    def simulated_seconds(self, cost_model: StepCostModel) -> float:
        """The run's time if each step cost ``cost_model.seconds(rows)``."""
        rows = np.array([s.rows for s in self.steps], dtype=np.float64)
        return float(np.sum(cost_model.seconds(rows))) if len(rows) else 0.0

    def summary(self) -> dict:
        """Totals over decode request-steps: how many there were, drafts offered and accepted."""
        decode = [(o, a) for s in self.steps for d, o, a in zip(s.decode, s.offered, s.accepted) if d]
        offered = sum(o for o, _ in decode)
        accepted = sum(a for _, a in decode)
        return {
            "steps": len(self.steps),
            "tokens": self.tokens,
            "decode_request_steps": len(decode),
            "offered": offered,
            "accepted": accepted,
            "offered_per_request_step": offered / len(decode) if decode else 0.0,
            "acceptance_rate": accepted / offered if offered else 0.0,
        }

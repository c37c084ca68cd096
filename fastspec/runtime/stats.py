"""``GenerationStats``: the counters of a run, and how one step's kept tokens add to them."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import paddle

from fastspec.runtime.adaptive.trace import AcceptanceTrace, StepRecord
from fastspec.runtime.state import SpecState
from fastspec.runtime.step_status import StepStatus

STAGES = ("insert", "propose", "pack", "model", "sample", "collect")


@dataclass
class GenerationStats:
    """Counters of one ``generate`` call.

    ``generated_tokens = accepted_tokens + bonus_tokens``: accepted drafts plus tokens the target
    chose itself (prefill token, correction or bonus). A request-step is one request taking part
    in one step; ``steps_saved`` = generated tokens - request-steps, the request-steps a
    one-token-per-step decoder would have needed beyond these.
    """

    steps: int = 0
    request_steps: int = 0
    decode_request_steps: int = 0
    decode_tokens: int = 0
    generated_tokens: int = 0
    accepted_tokens: int = 0
    bonus_tokens: int = 0
    proposed_tokens: int = 0
    proposed_per_position: list = field(default_factory=list)
    accepted_per_position: list = field(default_factory=list)
    wall_time: float = 0.0
    stage_time: dict = field(default_factory=lambda: {s: 0.0 for s in STAGES})
    program_builds: dict = field(default_factory=dict)  # step_mode static / cuda_graph: builds of each program

    @property
    def mean_accepted_length(self) -> float:
        """Tokens per decode request-step (accepted drafts + the bonus); 1.0 without drafts."""
        return self.decode_tokens / self.decode_request_steps if self.decode_request_steps else 0.0

    @property
    def acceptance_per_position(self) -> list[float]:
        """Fraction of drafts at position i (0-based) that were accepted."""
        return [a / p if p else 0.0 for a, p in zip(self.accepted_per_position, self.proposed_per_position)]

    @property
    def draft_acceptance_rate(self) -> float:
        return self.accepted_tokens / self.proposed_tokens if self.proposed_tokens else 0.0

    @property
    def steps_saved(self) -> int:
        return self.generated_tokens - self.request_steps

    @property
    def tokens_per_second(self) -> float:
        return self.generated_tokens / self.wall_time if self.wall_time > 0 else 0.0

    def summary(self) -> dict:
        return {
            "steps": self.steps,
            "request_steps": self.request_steps,
            "generated_tokens": self.generated_tokens,
            "accepted_tokens": self.accepted_tokens,
            "bonus_tokens": self.bonus_tokens,
            "proposed_tokens": self.proposed_tokens,
            "mean_accepted_length": self.mean_accepted_length,
            "draft_acceptance_rate": self.draft_acceptance_rate,
            "acceptance_per_position": self.acceptance_per_position,
            "steps_saved": self.steps_saved,
            "wall_time_s": self.wall_time,
            "tokens_per_second": self.tokens_per_second,
            "stage_time_s": dict(self.stage_time),
            "program_builds": dict(self.program_builds),
        }


def _tree_accepted(kept_tokens: np.ndarray, path: np.ndarray, tokens: np.ndarray, parents: np.ndarray) -> int:
    """Accepted drafts of a tree step: kept tokens that are the token of a child of the node that emitted them
    (the walk moved into that child, or would have but for the request's end)."""
    accepted = 0
    for token, node in zip(kept_tokens, path):
        if node < 0 or not np.any((parents == node) & (tokens == token)):
            break
        accepted += 1
    return accepted


def _common_prefix(kept_tokens: list, drafts: list) -> int:
    """How many drafts the kept tokens begin with (Python ints: a step's few tokens compare faster as lists)."""
    n = 0
    for token, draft in zip(kept_tokens, drafts):
        if token != draft:
            break
        n += 1
    return n


def count_step(
    stats: GenerationStats,
    state: SpecState,
    status: StepStatus,
    reject_all: bool,
    tree_drafted: dict[int, tuple] | None = None,
    trace: AcceptanceTrace | None = None,
) -> None:
    """Adds one step's kept tokens to the counters, split into accepted drafts and bonus tokens,
    from the step's ``status`` (a chain reads nothing more; a tree step's nodes come in ``tree_drafted``).

    The kept tokens are the accepted drafts, then one token of the target's own. Under every
    strategy a rejected draft differs from the token that replaces it, so the accepted drafts are
    the longest common prefix of drafts and kept tokens; only reject_all (which rejects even a
    draft equal to the target) needs saying. A tree's drafts are its nodes past the root; its
    position ``i`` is depth ``i + 1`` (proposed when the tree reaches it, accepted when the path does).
    """
    accept_num, accept_tokens = status.accept_num, status.accept_tokens
    if tree_drafted is None:
        drafted = {b: (bool(status.decode[b]), status.drafts_of(b)) for b in np.flatnonzero(status.rows > 0).tolist()}
        accept_nodes = None
    else:
        drafted, accept_nodes = tree_drafted, state.accept_nodes.numpy()
    step = StepRecord(status.num_rows)
    for b, (decode, drafts, *tree) in drafted.items():
        kept = int(accept_num[b])
        if tree:
            parents, depths = tree
            accepted = _tree_accepted(accept_tokens[b, :kept], accept_nodes[b, :kept], drafts, parents)
            proposed, reach = len(drafts) - 1, int(depths.max(initial=0))
        else:
            accepted = 0 if reject_all else _common_prefix(accept_tokens[b, : max(kept, 0)].tolist(), drafts.tolist())
            proposed = reach = len(drafts)
        stats.request_steps += 1
        stats.generated_tokens += kept
        stats.accepted_tokens += accepted
        stats.bonus_tokens += kept - accepted
        stats.proposed_tokens += proposed
        for i in range(reach):
            stats.proposed_per_position[i] += 1
            stats.accepted_per_position[i] += int(i < accepted)
        if decode:
            stats.decode_request_steps += 1
            stats.decode_tokens += kept
        step.add(state.request_of_slot[b], decode, proposed, accepted, kept)
    if trace is not None:
        trace.record(step)


class StageClock:
    """Adds the time of each stage to ``stats.stage_time`` (synchronising first off the CPU)."""

    def __init__(self, stats: GenerationStats, place) -> None:
        self.stats, self.sync = stats, not isinstance(place, paddle.CPUPlace)
        self.stage = ""

    def __call__(self, stage: str) -> StageClock:
        self.stage = stage
        return self

    def __enter__(self) -> None:
        self.t0 = time.perf_counter()

    def __exit__(self, *exc) -> None:
        if self.sync:
            paddle.device.synchronize()
        self.stats.stage_time[self.stage] += time.perf_counter() - self.t0

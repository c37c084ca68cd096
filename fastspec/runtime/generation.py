"""``generate``: the speculative-decoding loop over a model callable.

Each step: insert waiting requests into free slots -> propose drafts -> pack the output rows
-> model logits at those rows -> sampler (verify / sample + update_model_status) -> collect
finished requests. Returns the outputs and ``GenerationStats``.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import paddle

from fastspec.runtime.adaptive.controller import DraftLengthController
from fastspec.runtime.config import SpeculativeConfig
from fastspec.runtime.adaptive.cost_model import StepCostModel, make_cost_model
from fastspec.runtime.proposers import Proposer, make_proposer
from fastspec.runtime.sampler import Sampler
from fastspec.runtime.state import RequestParams, SpecState
from fastspec.runtime.step import SpecStep
from fastspec.runtime.trees import TreeInputs, tree_attention_mask, tree_positions
from fastspec.runtime.adaptive.trace import AcceptanceTrace, StepRecord

STAGES = ("insert", "propose", "pack", "model", "sample", "collect")


@dataclass
class ModelInputs:
    """What a model sees in one step (``B`` slots, ``L`` positions, ``T`` output rows).

    tokens: int64 paddle ``[B, L]``: each slot's committed tokens, then this step's drafts
        (``draft_tokens[b, 1..n-1]``), then -1.
    lengths: int ``[B]``: valid entries of ``tokens`` per slot (0 for a slot with no rows).
    row_slot: int32 ``[T]``: the slot of each output row (``batch_id_per_token_output``).
    row_pos: int64 ``[T]``: the position whose next token the row predicts.
    prompt_lens: int ``[B]``; request_ids: the request in each slot (None when free).
    tree: a tree step's nodes (``fastspec.runtime.trees.TreeInputs``: their columns in ``tokens``, positions
        and attention), None for a chain. A model that reads the grid takes a row's column from ``row_col``.
    """

    tokens: paddle.Tensor
    lengths: np.ndarray
    row_slot: np.ndarray
    row_pos: np.ndarray
    prompt_lens: np.ndarray
    request_ids: list
    tree: TreeInputs | None = None

    @property
    def row_col(self) -> np.ndarray:
        """int64 ``[T]``: each row's column in ``tokens`` (its position for a chain; node 0's column + the
        node index for a tree)."""
        return self.row_pos if self.tree is None else self.tree.row_col


Model = Callable[[ModelInputs], paddle.Tensor]


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


@dataclass
class GenerationResult:
    outputs: list  # int64 arrays, one per prompt, in prompt order (end token included if emitted)
    stats: GenerationStats


def default_params(config: SpeculativeConfig, count: int) -> list[RequestParams]:
    """Request i gets the config's sampling defaults with seed ``sampling.seed + i``."""
    s = config.sampling
    return [RequestParams(s.seed + i, s.max_dec_len, s.temperature, s.top_p, s.top_k) for i in range(count)]


def generate(
    model: Model,
    prompts: Sequence[Sequence[int]],
    config: SpeculativeConfig,
    *,
    max_num_seqs: int | None = None,
    max_model_len: int | None = None,
    end_tokens: Sequence[int] = (0,),
    place=None,
    params: Sequence[RequestParams] | None = None,
    proposer: Proposer | None = None,
    progress: Callable[[int, int, int], None] | None = None,
    draft_model: Callable | None = None,
    step_mode: str | None = None,
    on_step: Callable[[SpecState], None] | None = None,
    trace: AcceptanceTrace | None = None,
    cost_model: StepCostModel | None = None,
) -> GenerationResult:
    """Generates a continuation of every prompt with ``model``, speculating as ``config`` says.

    Args:
        model: ``model(ModelInputs) -> logits [T, V]``, or ``(logits, hidden [T, H])`` for proposers
            that read the target's hidden states (methods mtp, eagle3; see docs/draft_model.md).
        prompts: token-id sequences.
        config: a validated ``SpeculativeConfig``.
        max_num_seqs: batch slots (default: all prompts at once); more prompts wait for a slot.
        max_model_len: positions per slot (default: longest prompt + longest max_dec_len).
        end_tokens: token ids that end a request.
        place: where the state lives ('cpu', 'gpu', a paddle place; default: Paddle's current).
        params: per-request sampling parameters (default: ``default_params``).
        proposer: overrides the proposer the config names.
        progress: called after each step with (finished requests, total requests, generated tokens).
        draft_model: methods mtp / eagle3: the Paddle draft layer the proposer runs (see DraftModelProposer).
        step_mode: how ``SpecStep`` (propose + pack, then sample / verify + update) runs:
            ``"eager"`` (the default; None means the same) op by op, ``"static"`` as two programs
            built once and replayed, ``"cuda_graph"`` captured in CUDA Graphs (Paddle GPU builds).
        on_step: called with the state after each step's update, before finished requests leave.
        trace: records every request's offered and accepted drafts at every step (fastspec.runtime.adaptive.trace).
        cost_model: with ``adaptive.enabled``: the step cost the draft-length controller weighs
            drafts against (default: what ``config.adaptive`` names; fastspec.runtime.adaptive.cost_model).
    """
    config.validate()
    params = list(params) if params is not None else default_params(config, len(prompts))
    if len(params) != len(prompts):
        raise ValueError(f"generate: {len(prompts)} prompts but {len(params)} request params")
    if proposer is None and config.speculative:
        proposer = make_proposer(config, draft_model)
    wants_hidden = proposer is not None and proposer.needs_target_hidden
    batch = max_num_seqs or max(1, len(prompts))
    length = max_model_len or (max((len(p) for p in prompts), default=1) + max((q.max_dec_len for q in params), default=1))
    nodes = config.tree.max_nodes if config.tree.enabled else 0
    state = SpecState(batch, length, config.num_speculative_tokens, end_tokens, place, num_tree_nodes=nodes)
    sampler = Sampler(config)
    adaptive = _draft_length_controller(config, state, cost_model)
    step = SpecStep(state, sampler, proposer, mode=step_mode or "eager", controller=adaptive)
    stats = GenerationStats(
        proposed_per_position=[0] * config.num_speculative_tokens,
        accepted_per_position=[0] * config.num_speculative_tokens,
    )
    outputs: list = [None] * len(prompts)
    waiting = deque(range(len(prompts)))
    finished = 0
    clock = _Clock(stats, state.place)

    start = time.perf_counter()
    while waiting or len(state.free_slots) < batch:
        with clock("insert"):
            while waiting and state.free_slots:
                i = waiting.popleft()
                slot = state.insert(prompts[i], params[i], request_id=i)
                if adaptive is not None:
                    adaptive.reset_slot(slot)
        step_start = time.perf_counter()
        with clock("propose"):
            step.prepare()  # plans the draft lengths, proposes and packs the rows
        with clock("pack"):
            inputs, drafted = _model_inputs(state)
        with clock("model"):
            logits = model(inputs)
            hidden = None
            if isinstance(logits, tuple):  # (logits, hidden states of the rows)
                logits, hidden = logits
            if wants_hidden and hidden is None:
                raise ValueError(f"generate: {type(proposer).__name__} needs the target's hidden states: "
                                 "the model must return (logits [T, V], hidden [T, H])")
        with clock("sample"):
            step.finish(logits, hidden)  # sample / verify, update, observe_target, adaptive observe
        if adaptive is not None:
            # the whole step (propose to update) by its tokens: the per-step overhead that drafts
            # amortise is in the fit's intercept, what each scored token adds in its slope
            adaptive.cost_model.record(state.num_rows, time.perf_counter() - step_start)
        if on_step is not None:
            on_step(state)
        with clock("collect"):
            _count(stats, state, drafted, reject_all=sampler.reject_all, trace=trace)
            if adaptive is not None:
                adaptive.refresh_costs()
            for slot in state.finished_slots():
                outputs[state.request_of_slot[slot]] = state.output(slot)
                state.free(slot)
                if adaptive is not None:
                    adaptive.reset_slot(slot)
                finished += 1
        stats.steps += 1
        if progress is not None:
            progress(finished, len(prompts), stats.generated_tokens)
    stats.wall_time = time.perf_counter() - start
    if step.mode != "eager":
        stats.program_builds = dict(step.builds)
    return GenerationResult(outputs, stats)


def _draft_length_controller(config: SpeculativeConfig, state: SpecState,
                             cost_model: StepCostModel | None) -> DraftLengthController | None:
    """The adaptive draft-length controller when the config asks for one (and drafts exist)."""
    if not (config.adaptive.enabled and config.speculative):
        return None
    cost_model = cost_model if cost_model is not None else make_cost_model(config.adaptive)
    return DraftLengthController.from_config(config, state.max_num_seqs, cost_model, place=state.place)


def _model_inputs(state: SpecState) -> tuple[ModelInputs, dict[int, tuple]]:
    """The token grid and row positions of this step; also what each slot drafted:
    ``(decode, drafts)``, for a tree ``(decode, nodes' tokens, parents, depths)`` of its nodes."""
    tokens = state.token_ids_all.numpy().copy()
    prompt_lens = state.prompt_lens.numpy()
    step_idx = state.step_idx.numpy()
    enc = state.seq_lens_encoder.numpy()
    rows = np.diff(state.cu_seqlens_q_output.numpy())
    if state.trees:
        nodes = state.draft_tree_tokens.numpy()
        parents, depths = state.draft_tree_parents.numpy(), state.draft_tree_depths.numpy()
        counts = np.where(enc > 0, 0, rows)
        positions = tree_positions(depths, state.seq_lens_decoder.numpy())
        tree = TreeInputs(start=np.where(counts > 0, prompt_lens + step_idx - 1, -1), nodes=counts.astype(np.int64),
                          mask=tree_attention_mask(parents, counts), positions=positions, row_col=np.zeros(0, np.int64))
    else:
        nodes = state.draft_tokens.numpy()
        tree = None
    lengths = np.zeros(state.max_num_seqs, dtype=np.int64)
    row_slot, row_pos, row_col, drafted = [], [], [], {}
    for b in np.flatnonzero(rows > 0):
        p, s, n = int(prompt_lens[b]), int(step_idx[b]), int(rows[b])
        if enc[b] > 0:  # prefill: one row, after the whole prompt
            lengths[b] = p
            row_slot.append(b)
            row_pos.append(p - 1)
            row_col.append(p - 1)
            drafted[b] = (False, nodes[b, 1:1]) if tree is None else (False, nodes[b, :1], parents[b, :1], depths[b, :1])
            continue
        drafts = nodes[b, 1:n]
        tokens[b, p + s : p + s + n - 1] = drafts
        lengths[b] = p + s + n - 1
        row_slot.extend([b] * n)
        row_col.extend(range(p + s - 1, p + s - 1 + n))
        if tree is None:
            row_pos.extend(range(p + s - 1, p + s - 1 + n))
            drafted[b] = (True, drafts.copy())
        else:
            row_pos.extend(positions[b, :n])
            drafted[b] = (True, nodes[b, :n].copy(), parents[b, :n].copy(), depths[b, :n].copy())
    if tree is not None:
        tree.row_col = np.asarray(row_col, dtype=np.int64)
    inputs = ModelInputs(
        tokens=paddle.to_tensor(tokens, place=state.place),
        lengths=lengths,
        row_slot=np.asarray(row_slot, dtype=np.int32),
        row_pos=np.asarray(row_pos, dtype=np.int64),
        prompt_lens=prompt_lens.copy(),
        request_ids=list(state.request_of_slot),
        tree=tree,
    )
    return inputs, drafted


def _tree_accepted(kept_tokens: np.ndarray, path: np.ndarray, tokens: np.ndarray, parents: np.ndarray) -> int:
    """Accepted drafts of a tree step: kept tokens that are the token of a child of the node that emitted them
    (the walk moved into that child, or would have but for the request's end)."""
    accepted = 0
    for token, node in zip(kept_tokens, path):
        if node < 0 or not np.any((parents == node) & (tokens == token)):
            break
        accepted += 1
    return accepted


def _count(stats: GenerationStats, state: SpecState, drafted: dict[int, tuple], reject_all: bool,
           trace: AcceptanceTrace | None = None) -> None:
    """Adds one step's kept tokens to the counters, split into accepted drafts and bonus tokens.

    The kept tokens are the accepted drafts, then one token of the target's own. Under every
    strategy a rejected draft differs from the token that replaces it, so the accepted drafts are
    the longest common prefix of drafts and kept tokens; only reject_all (which rejects even a
    draft equal to the target) needs saying. A tree's drafts are its nodes past the root; its
    position ``i`` is depth ``i + 1`` (proposed when the tree reaches it, accepted when the path does).
    """
    accept_num = state.accept_num.numpy()
    accept_tokens = state.accept_tokens.numpy()
    accept_nodes = state.accept_nodes.numpy() if state.trees else None
    step = StepRecord(state.num_rows)
    for b, (decode, drafts, *tree) in drafted.items():
        kept = int(accept_num[b])
        if tree:
            parents, depths = tree
            accepted = _tree_accepted(accept_tokens[b, :kept], accept_nodes[b, :kept], drafts, parents)
            proposed, reach = len(drafts) - 1, int(depths.max(initial=0))
        else:
            accepted = 0
            while not reject_all and accepted < min(kept, len(drafts)) and accept_tokens[b, accepted] == drafts[accepted]:
                accepted += 1
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


class _Clock:
    """Adds the time of each stage to ``stats.stage_time`` (synchronising first off the CPU)."""

    def __init__(self, stats: GenerationStats, place) -> None:
        self.stats, self.sync = stats, not isinstance(place, paddle.CPUPlace)
        self.stage = ""

    def __call__(self, stage: str) -> _Clock:
        self.stage = stage
        return self

    def __enter__(self) -> None:
        self.t0 = time.perf_counter()

    def __exit__(self, *exc) -> None:
        if self.sync:
            paddle.device.synchronize()
        self.stats.stage_time[self.stage] += time.perf_counter() - self.t0

"""``generate``: the speculative-decoding loop over a model callable.

Each step: insert waiting requests into free slots -> propose drafts -> pack the output rows
-> model logits at those rows -> sampler (verify / sample + update_model_status) -> collect
finished requests. Returns the outputs and ``GenerationStats``.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable, Sequence


from fastspec.runtime.adaptive.controller import DraftLengthController
from fastspec.runtime.adaptive.cost_model import StepCostModel, make_cost_model
from fastspec.runtime.adaptive.trace import AcceptanceTrace
from fastspec.runtime.config import SpeculativeConfig
from fastspec.runtime.grammar import make_grammar_batch
from fastspec.runtime.model_inputs import Model, ModelInputs, build_model_inputs
from fastspec.runtime.proposers import Proposer, make_proposer
from fastspec.runtime.sampler import Sampler
from fastspec.runtime.state import RequestParams, SpecState
from fastspec.runtime.stats import STAGES, GenerationStats, StageClock, count_step
from fastspec.runtime.step import SpecStep

__all__ = ["GenerationResult", "GenerationStats", "Model", "ModelInputs", "STAGES", "default_params", "generate"]


@dataclass
class GenerationResult:
    outputs: list  # int64 arrays, one per prompt, in prompt order (end token included if emitted)
    stats: GenerationStats


def default_params(config: SpeculativeConfig, count: int) -> list[RequestParams]:
    """Request i gets the config's sampling defaults with seed ``sampling.seed + i``."""
    s = config.sampling
    # the per-request parameters that have a config default (a grammar constraint has none)
    defaults = {f.name for f in dataclasses.fields(s)}
    names = [f.name for f in dataclasses.fields(RequestParams) if f.name in defaults and f.name not in ("seed", "max_dec_len")]
    return [RequestParams(s.seed + i, s.max_dec_len, **{n: copy.deepcopy(getattr(s, n)) for n in names})
            for i in range(count)]


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
    tokenizer=None,
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
        tokenizer: the runner's tokenizer (a ``tokenizers.Tokenizer`` or the path of a ``tokenizer.json``), which
            requests with ``structured_output`` need (docs/structured_output.md).

    Raises:
        StructuredOutputError: a request's ``structured_output`` is malformed or does not compile, or there is
            no tokenizer for it (raised before the first step, naming the request).
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
    grammar, constraints = make_grammar_batch(params, tokenizer, state, config)
    sampler.grammar = grammar
    adaptive = _draft_length_controller(config, state, cost_model)
    step = SpecStep(state, sampler, proposer, mode=step_mode or "eager", controller=adaptive, grammar=grammar)
    stats = GenerationStats(
        proposed_per_position=[0] * config.num_speculative_tokens,
        accepted_per_position=[0] * config.num_speculative_tokens,
    )
    outputs: list = [None] * len(prompts)
    waiting = deque(range(len(prompts)))
    finished = 0
    clock = StageClock(stats, state.place)

    start = time.perf_counter()
    while waiting or len(state.free_slots) < batch:
        with clock("insert"):
            while waiting and state.free_slots:
                i = waiting.popleft()
                slot = state.insert(prompts[i], params[i], request_id=i)
                if constraints[i] is not None:
                    grammar.insert(slot, constraints[i], request=i)
                if adaptive is not None:
                    adaptive.reset_slot(slot)
        step_start = time.perf_counter()
        with clock("propose"):
            step.prepare()  # plans the draft lengths, proposes and packs the rows (the grammars' drafts and masks)
        with clock("pack"):
            inputs, drafted = build_model_inputs(state)
        with clock("model"):
            logits = model(inputs)
            hidden = None
            if isinstance(logits, tuple):  # (logits, hidden states of the rows)
                logits, hidden = logits
            if wants_hidden and hidden is None:
                raise ValueError(f"generate: {type(proposer).__name__} needs the target's hidden states: "
                                 "the model must return (logits [T, V], hidden [T, H])")
        with clock("sample"):
            status = step.finish(logits, hidden)  # sample / verify, update, observers; the step's one read
        if adaptive is not None:
            # the whole step (propose to update) by its tokens: the per-step overhead that drafts
            # amortise is in the fit's intercept, what each scored token adds in its slope
            adaptive.cost_model.record(state.num_rows, time.perf_counter() - step_start)
        if on_step is not None:
            on_step(state)
        with clock("collect"):
            count_step(stats, state, status, sampler.reject_all, tree_drafted=drafted, trace=trace)
            if adaptive is not None:
                adaptive.refresh_costs()
            for slot in state.finished_slots(status):
                outputs[state.request_of_slot[slot]] = state.host.output(slot)
                state.free(slot)
                if grammar is not None:
                    grammar.free(slot)
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

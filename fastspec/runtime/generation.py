"""``generate``: a fixed set of requests run to the end through a ``SpecEngine``.

Each step: insert waiting requests into free slots -> propose drafts -> pack the output rows
-> model logits at those rows -> sampler (verify / sample + update_model_status) -> collect
finished requests (``fastspec.runtime.engine``). Returns the outputs and ``GenerationStats``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from fastspec.runtime.adaptive.cost_model import StepCostModel
from fastspec.runtime.adaptive.trace import AcceptanceTrace
from fastspec.runtime.config import SpeculativeConfig
from fastspec.runtime.engine import ModelCallError, SpecEngine, config_params
from fastspec.runtime.model_inputs import Model, ModelInputs
from fastspec.runtime.proposers import Proposer
from fastspec.runtime.state import RequestParams, SpecState
from fastspec.runtime.stats import STAGES, GenerationStats

__all__ = ["GenerationResult", "GenerationStats", "Model", "ModelInputs", "STAGES", "default_params", "generate"]


@dataclass
class GenerationResult:
    outputs: list  # int64 arrays, one per prompt, in prompt order (end token included if emitted)
    stats: GenerationStats
    # per prompt: None, or (logprobs = n) one (logprob, [(token id, logprob), ...n]) per output token
    logprobs: list = field(default_factory=list)


def default_params(config: SpeculativeConfig, count: int) -> list[RequestParams]:
    """Request i gets the config's sampling defaults with seed ``sampling.seed + i``."""
    return [config_params(config, i) for i in range(count)]


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
    batch = max_num_seqs or max(1, len(prompts))
    length = max_model_len or (
        max((len(p) for p in prompts), default=1) + max((q.max_dec_len for q in params), default=1)
    )
    constrained = any(getattr(p, "structured_output", None) is not None for p in params)
    engine = SpecEngine(
        model,
        config,
        max_num_seqs=batch,
        max_model_len=length,
        end_tokens=end_tokens,
        place=place,
        proposer=proposer,
        draft_model=draft_model,
        step_mode=step_mode,
        on_step=on_step,
        trace=trace,
        cost_model=cost_model,
        tokenizer=tokenizer if constrained else None,
    )
    for i, (prompt, request) in enumerate(zip(prompts, params)):
        engine.add_request(i, prompt, request)
    tokens: list = [[] for _ in prompts]
    logprobs: list = [None if p.logprobs is None else [] for p in params]
    finished = 0
    stats = engine.stats
    start = time.perf_counter()
    while engine.has_unfinished():
        try:
            outputs = engine.step()
        except ModelCallError as error:  # generate hands the model's own exception on
            raise error.__cause__
        for out in outputs:
            tokens[out.request_id].extend(out.new_tokens)
            if out.logprobs is not None:
                logprobs[out.request_id].extend(out.logprobs)
            finished += out.finished
        if progress is not None:
            progress(finished, len(prompts), stats.generated_tokens)
    stats.wall_time = time.perf_counter() - start
    if engine.spec_step.mode != "eager":
        stats.program_builds = dict(engine.spec_step.builds)
    return GenerationResult([np.asarray(t, dtype=np.int64) for t in tokens], stats, logprobs)

"""``SpecEngine``: the speculative-decoding loop as a server drives it, one step at a time.

A server adds requests whenever they arrive (``add_request``), calls ``step()`` and streams the
tokens each step accepted (``RequestOutput``), aborts requests whose client went away
(``abort``) and lets the engine preempt requests when the tokens its running requests hold
would pass ``kv_budget_tokens`` (newest first, or ``preempt`` by hand). A preempted request
gives up its slot and later resumes by recomputing its prefix: its prompt and the output it
already has go back in as a prefill, with the prompt length and generated count it had, so its
positions, and so its seeded draws, go on where they stopped. A request's output therefore
depends on nothing else that happens in the engine (docs/serving.md).
"""

from __future__ import annotations

import copy
import dataclasses
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Hashable, Sequence

import numpy as np
import paddle

from fastspec.runtime.adaptive.controller import DraftLengthController
from fastspec.runtime.adaptive.cost_model import StepCostModel, make_cost_model
from fastspec.runtime.adaptive.trace import AcceptanceTrace
from fastspec.runtime.config import SpeculativeConfig
from fastspec.runtime.grammar import GrammarTokenizer, StructuredOutput, grammar_batch
from fastspec.runtime.model_inputs import Model, build_model_inputs
from fastspec.runtime.proposers import Proposer, make_proposer
from fastspec.runtime.sampler import Sampler
from fastspec.runtime.sampling_params import check_request
from fastspec.runtime.state import RequestParams, SpecState
from fastspec.runtime.stats import GenerationStats, StageClock, count_step
from fastspec.runtime.step import SpecStep

FINISH_REASONS = ("end", "stop", "length", "aborted")

__all__ = ["FINISH_REASONS", "ModelCallError", "RequestError", "RequestOutput", "SpecEngine"]


class RequestError(ValueError):
    """A call names a request the engine cannot take (unknown, already live, or one that can never
    fit); the message names the request. The engine is left as it was."""


class ModelCallError(RuntimeError):
    """The model raised during a step. Nothing of the step was committed: every request is where it
    was, so the next ``step()`` retries them; ``request_ids`` names the requests the failed step ran
    (abort them to give up on them). The model's exception is the ``__cause__``."""

    def __init__(self, request_ids: Sequence[Hashable], cause: BaseException) -> None:
        self.request_ids = tuple(request_ids)
        super().__init__(
            f"SpecEngine.step: the model raised {type(cause).__name__}: {cause} "
            f"(requests of the step, not advanced: {list(self.request_ids)})"
        )


@dataclass
class RequestOutput:
    """What one step did for one request: the tokens it accepted (``new_tokens``, in order; the end
    token included when emitted) and, once ``finished``, why (``finish_reason``):
    ``"end"`` an end token, ``"stop"`` another stop rule of the request, ``"length"`` it reached
    ``max_dec_len`` (its last token is then an end token), ``"aborted"`` ``abort`` was called.
    ``logprobs``: for a request with ``logprobs = n``, one ``(logprob, [(token id, logprob), ...])``
    per new token, its row's n most likely tokens most likely first (docs/python_api.md); else None."""

    request_id: Hashable
    new_tokens: list
    finished: bool = False
    finish_reason: str | None = None
    logprobs: list | None = None


@dataclass(eq=False)  # compared by identity
class _Request:
    request_id: Hashable
    prompt: np.ndarray
    params: RequestParams
    arrival: int  # the order of add_request: preemption takes the newest, admission the oldest
    output: list = field(default_factory=list)
    slot: int | None = None
    preemptions: int = 0
    constraint: object = None  # the compiled structured output (grammar.StructuredOutput), or None


class SpecEngine:
    """Speculative decoding for requests that come and go.

    Args:
        model: ``model(ModelInputs) -> logits [T, V]`` or ``(logits, hidden [T, H])`` (as ``generate``).
        config: a ``SpeculativeConfig``.
        max_num_seqs: batch slots.
        max_model_len: positions per slot; a request's prompt + max_dec_len must fit.
        end_tokens: token ids that end a request.
        kv_budget_tokens: the tokens the running requests may hold in the model's cache: each holds
            its prompt, its output and this step's rows (``state.rows_per_slot``). Before each step
            the newest running requests are preempted until the rest fit (the oldest always runs);
            waiting requests start, oldest preempted first, then in arrival order, while they fit.
            None: no limit (only the slots bound the batch).
        place, proposer, draft_model, step_mode, on_step, trace, cost_model: as for ``generate``.
        tokenizer: the runner's tokenizer, for requests with ``structured_output`` (docs/structured_output.md);
            with one, the engine keeps a grammar batch (llguidance) from the start.

    A step runs every running request one speculative step; ``step()`` returns a ``RequestOutput``
    for each request that accepted tokens or finished, and one for each request aborted since the
    last step.
    """

    def __init__(
        self,
        model: Model,
        config: SpeculativeConfig,
        *,
        max_num_seqs: int,
        max_model_len: int,
        end_tokens: Sequence[int],
        kv_budget_tokens: int | None = None,
        place=None,
        proposer: Proposer | None = None,
        draft_model: Callable | None = None,
        step_mode: str | None = None,
        on_step: Callable[[SpecState], None] | None = None,
        trace: AcceptanceTrace | None = None,
        cost_model: StepCostModel | None = None,
        tokenizer=None,
    ) -> None:
        config.validate()
        if proposer is None and config.speculative:
            proposer = make_proposer(config, draft_model)
        self.model, self.config, self.proposer = model, config, proposer
        self.wants_hidden = proposer is not None and proposer.needs_target_hidden
        nodes = config.tree.max_nodes if config.tree.enabled else 0
        self.state = SpecState(
            max_num_seqs, max_model_len, config.num_speculative_tokens, end_tokens, place, num_tree_nodes=nodes
        )
        if kv_budget_tokens is not None and kv_budget_tokens < 1:
            raise ValueError(f"SpecEngine: kv_budget_tokens must be a positive int or None, got {kv_budget_tokens!r}")
        self.kv_budget_tokens = kv_budget_tokens
        self.sampler = Sampler(config)
        # structured output: with the runner's tokenizer, a grammar batch for the requests that bring a constraint
        self._grammar_tokenizer = None if tokenizer is None else GrammarTokenizer(tokenizer, int(end_tokens[0]))
        self.grammar = None if tokenizer is None else grammar_batch(self._grammar_tokenizer, self.state, config)
        self.sampler.grammar = self.grammar
        self.controller = _draft_length_controller(config, self.state, cost_model)
        self.spec_step = SpecStep(
            self.state,
            self.sampler,
            proposer,
            mode=step_mode or "eager",
            controller=self.controller,
            grammar=self.grammar,
        )
        self.on_step, self.trace = on_step, trace
        self.stats = GenerationStats(
            proposed_per_position=[0] * config.num_speculative_tokens,
            accepted_per_position=[0] * config.num_speculative_tokens,
        )
        self._clock = StageClock(self.stats, self.state.place)
        self._end_tokens = {int(t) for t in end_tokens}
        self._requests: dict = {}  # every live request: waiting, preempted or running
        self._waiting: deque = deque()  # new requests, in arrival order
        self._preempted: list = []  # resume before new requests, oldest arrival first
        self._running: dict = {}  # slot -> _Request
        self._pending: list = []  # outputs decided between steps (aborts), handed out by the next step()
        self._arrivals = 0
        self.num_preemptions = 0  # by hand and by the budget, since the engine was built

    # -- the server's calls -----------------------------------------------------------------

    def add_request(self, request_id: Hashable, prompt: Sequence[int], params: RequestParams | None = None) -> None:
        """Queues a request; it starts at the next step with a free slot (and room in the budget).

        ``params`` default: the config's sampling defaults, seed ``sampling.seed`` + the number of
        requests added before.

        Raises:
            RequestError: the id is live already or not hashable, the prompt is empty or holds a
                negative id, prompt + max_dec_len exceeds max_model_len, or the request could
                never fit in ``kv_budget_tokens``.
            InvalidRequestError: a sampling parameter out of range (``sampling_params.check_request``).
            StructuredOutputError: its ``structured_output`` does not compile, or the engine has no tokenizer.
            Nothing is changed.
        """
        try:
            live = request_id in self._requests
        except TypeError:
            raise RequestError(
                f"SpecEngine.add_request: request id must be hashable, got {type(request_id).__name__}"
            ) from None
        if request_id is None:
            raise RequestError("SpecEngine.add_request: request id must not be None (None marks a free slot)")
        if live:
            raise RequestError(f"SpecEngine.add_request: request {request_id!r} is already in the engine")
        tokens = np.asarray(prompt)
        if tokens.ndim != 1 or tokens.size == 0 or not np.issubdtype(tokens.dtype, np.integer):
            raise RequestError(
                f"SpecEngine.add_request: request {request_id!r}: the prompt must be a non-empty "
                f"sequence of token ids, got shape {list(tokens.shape)} of {tokens.dtype}"
            )
        if tokens.min() < 0:
            raise RequestError(
                f"SpecEngine.add_request: request {request_id!r}: the prompt holds token id "
                f"{int(tokens.min())}, expected ids >= 0"
            )
        if params is None:
            params = config_params(self.config, self._arrivals)
        if not isinstance(params, RequestParams):
            raise RequestError(
                f"SpecEngine.add_request: request {request_id!r}: params must be RequestParams, "
                f"got {type(params).__name__}"
            )
        if not isinstance(params.max_dec_len, (int, np.integer)) or params.max_dec_len < 1:
            raise RequestError(
                f"SpecEngine.add_request: request {request_id!r}: max_dec_len must be >= 1, got {params.max_dec_len!r}"
            )
        length = self.state.max_model_len
        if tokens.size + params.max_dec_len > length:
            raise RequestError(
                f"SpecEngine.add_request: request {request_id!r}: prompt length {tokens.size} + "
                f"max_dec_len {params.max_dec_len} exceeds max_model_len {length} (the slot)"
            )
        most = tokens.size + params.max_dec_len - 1 + self.state.rows_per_slot  # held before its last step
        if self.kv_budget_tokens is not None and most > self.kv_budget_tokens:
            raise RequestError(
                f"SpecEngine.add_request: request {request_id!r} may hold {most} tokens (prompt "
                f"{tokens.size} + max_dec_len {params.max_dec_len} - 1 + {self.state.rows_per_slot} "
                f"rows), more than kv_budget_tokens {self.kv_budget_tokens}"
            )
        check_request(params, request_id, self.state.vocab_size, self.state.logit_tables.widths)  # InvalidRequestError
        constraint = None
        spec = getattr(params, "structured_output", None)
        if spec is not None:  # compiled now: a bad one is refused here, naming the request
            constraint = StructuredOutput.compile(spec, self._grammar_tokenizer, request_id)
        request = _Request(request_id, tokens.astype(np.int64), params, self._arrivals, constraint=constraint)
        self._arrivals += 1
        self._requests[request_id] = request
        self._waiting.append(request)

    def abort(self, request_id: Hashable) -> None:
        """Ends a live request now (waiting, preempted or running); the next ``step()`` reports it
        finished with reason ``"aborted"``. Raises RequestError for an id that is not live."""
        request = self._live("abort", request_id)
        if request.slot is not None:
            self._release(request)
        elif request in self._preempted:
            self._preempted.remove(request)
        else:
            self._waiting.remove(request)
        del self._requests[request_id]
        self._pending.append(RequestOutput(request_id, [], True, "aborted"))

    def preempt(self, request_id: Hashable) -> None:
        """Takes a running request out of its slot; it resumes (recomputing its prompt and output)
        when a slot and the budget allow, before any new request. Raises RequestError unless the
        request is running."""
        request = self._live("preempt", request_id)
        if request.slot is None:
            raise RequestError(f"SpecEngine.preempt: request {request_id!r} is not running")
        self._release(request)
        request.preemptions += 1
        self.num_preemptions += 1
        self._preempted.append(request)
        self._preempted.sort(key=lambda r: r.arrival)

    def has_unfinished(self) -> bool:
        """Requests still live, or outputs (aborts) not handed out yet."""
        return bool(self._requests) or bool(self._pending)

    def step(self) -> list[RequestOutput]:
        """Makes room, starts waiting requests, runs one step of every running request.

        Raises:
            ModelCallError: the model raised; nothing was advanced (see the class).
        """
        outputs, self._pending = self._pending, []
        try:
            with self._clock("insert"):
                self._make_room()
                self._admit()
            if self._running:
                outputs += self._run_step()
        except BaseException:
            self._pending = outputs + self._pending  # the aborts are still to be handed out
            raise
        return outputs

    # -- inspection -------------------------------------------------------------------------

    def __contains__(self, request_id: Hashable) -> bool:
        """The request is live (waiting, preempted or running)."""
        try:
            return request_id in self._requests
        except TypeError:
            return False

    def running_ids(self) -> list:
        """The running requests, by slot."""
        return [self._running[s].request_id for s in sorted(self._running)]

    @property
    def num_running(self) -> int:
        return len(self._running)

    @property
    def num_waiting(self) -> int:
        """Requests waiting for a slot: new ones and preempted ones."""
        return len(self._waiting) + len(self._preempted)

    def held_tokens(self) -> int:
        """The tokens the running requests hold in the coming step (see ``kv_budget_tokens``)."""
        return sum(self._footprint(r) for r in self._running.values())

    def check_invariants(self) -> None:
        """Raises AssertionError when the host's book of requests and the state's slots disagree:
        every running request in its slot, its committed tokens those it streamed, free slots
        stopped and empty, every live request in exactly one place. Reads the state (tests, debugging)."""
        state = self.state
        stopped, prompt_lens = state.stop_flags.numpy(), state.prompt_lens.numpy()
        occupied = [s for s in range(state.max_num_seqs) if state.request_of_slot[s] is not None]
        assert sorted(occupied) == sorted(self._running), f"occupied slots {occupied}, running {sorted(self._running)}"
        assert sorted(state.free_slots) == sorted(set(range(state.max_num_seqs)) - set(occupied)), "free list"
        for slot in range(state.max_num_seqs):
            request = self._running.get(slot)
            if request is None:
                assert stopped[slot], f"free slot {slot} is not stopped"
                continue
            assert state.request_of_slot[slot] == request.request_id and request.slot == slot, f"slot {slot}"
            assert not stopped[slot], f"running request {request.request_id!r} is stopped"
            assert int(prompt_lens[slot]) == len(request.prompt), f"request {request.request_id!r}: prompt length"
            assert state.output(slot).tolist() == request.output, f"request {request.request_id!r}: output"
        places = [r.request_id for r in self._running.values()] + [r.request_id for r in self._waiting]
        places += [r.request_id for r in self._preempted]
        assert sorted(map(repr, places)) == sorted(map(repr, self._requests)), "live requests"
        assert all(r.slot is None for r in list(self._waiting) + self._preempted), "a waiting request holds a slot"

    # -- admission and preemption -----------------------------------------------------------

    def _footprint(self, request: _Request) -> int:
        return len(request.prompt) + len(request.output) + self.state.rows_per_slot

    def _make_room(self) -> None:
        if self.kv_budget_tokens is None:
            return
        while len(self._running) > 1 and self.held_tokens() > self.kv_budget_tokens:
            newest = max(self._running.values(), key=lambda r: r.arrival)
            self.preempt(newest.request_id)

    def _admit(self) -> None:
        held = self.held_tokens() if self.kv_budget_tokens is not None else 0
        while self.state.free_slots and (self._preempted or self._waiting):
            request = self._preempted[0] if self._preempted else self._waiting[0]
            if self.kv_budget_tokens is not None:
                need = self._footprint(request)
                if held + need > self.kv_budget_tokens:
                    return  # in order: a later, smaller request does not pass it
                held += need
            (self._preempted.pop(0) if self._preempted else self._waiting.popleft())
            if request.constraint is not None:  # the matcher first: the slot the state will take
                self.grammar.insert(self.state.free_slots[0], request.constraint, request.request_id, request.output)
            slot = self.state.insert(
                request.prompt, request.params, request_id=request.request_id, output=request.output or None
            )
            request.slot = slot
            self._running[slot] = request
            if self.controller is not None:
                self.controller.reset_slot(slot)

    def _release(self, request: _Request) -> None:
        """Empties the slot of a request that leaves before finishing (aborted or preempted)."""
        slot = request.slot
        self.state.free(slot)
        if self.grammar is not None:
            self.grammar.free(slot)
        if self.controller is not None:
            self.controller.reset_slot(slot)
        if self.proposer is not None:
            self.proposer.release_slot(slot)
        del self._running[slot]
        request.slot = None

    def _live(self, op: str, request_id: Hashable) -> _Request:
        try:
            request = self._requests.get(request_id)
        except TypeError:
            request = None
        if request is None:
            raise RequestError(f"SpecEngine.{op}: unknown request {request_id!r} (never added, or finished)")
        return request

    # -- one step ---------------------------------------------------------------------------

    def _run_step(self) -> list[RequestOutput]:
        """Propose -> model -> sample / verify + update -> collect: the only place a step runs."""
        state, step, clock, stats = self.state, self.spec_step, self._clock, self.stats
        step_start = time.perf_counter()
        step.logprobs = any(r.params.logprobs is not None for r in self._running.values())
        with clock("propose"):
            step.prepare()  # plans the draft lengths, proposes and packs the rows (the grammars' drafts and masks)
        with clock("pack"):
            inputs, drafted = build_model_inputs(state)
        with clock("model"):
            try:
                logits = self.model(inputs)
            except Exception as error:
                # the matchers consumed the last step's tokens already: the retry must not hand them over again
                paddle.assign(paddle.zeros_like(state.accept_num), output=state.accept_num)
                raise ModelCallError(self.running_ids(), error) from error
            logits, hidden = self._split(logits)
        with clock("sample"):
            status = step.finish(logits, hidden)  # sample / verify, update, observers; the step's one read
        if self.controller is not None:
            # the whole step (propose to update) by its tokens: the per-step overhead that drafts
            # amortise is in the fit's intercept, what each scored token adds in its slope
            self.controller.cost_model.record(state.num_rows, time.perf_counter() - step_start)
        if self.on_step is not None:
            self.on_step(state)
        with clock("collect"):
            count_step(stats, state, status, self.sampler.reject_all, tree_drafted=drafted, trace=self.trace)
            if self.controller is not None:
                self.controller.refresh_costs()
            outputs = self._collect(status, state.finished_slots(status))
        stats.steps += 1
        return outputs

    def _split(self, logits):
        hidden = None
        if isinstance(logits, tuple):  # (logits, hidden states of the rows)
            logits, hidden = logits
        if self.wants_hidden and hidden is None:
            raise ValueError(
                f"generate: {type(self.proposer).__name__} needs the target's hidden states: "
                "the model must return (logits [T, V], hidden [T, H])"
            )
        return logits, hidden

    def _collect(self, status, finished_slots: list[int]) -> list[RequestOutput]:
        """Each stepped request's kept tokens (``accept_tokens[:accept_num]`` of the step's status) and the
        requests that finished, whose slots are freed."""
        finished = set(finished_slots)
        outputs = []
        for slot in sorted(self._running):
            n = int(status.accept_num[slot])
            if n <= 0 and slot not in finished:
                continue
            request = self._running[slot]
            new = status.accept_tokens[slot, : max(n, 0)].tolist()
            request.output.extend(new)
            reason = self._finish_reason(request) if slot in finished else None
            n = request.params.logprobs
            logprobs = None if n is None else status.logprobs_of(slot, n)
            outputs.append(RequestOutput(request.request_id, new, slot in finished, reason, logprobs))
            if slot in finished:
                self.state.free(slot)
                if self.grammar is not None:
                    self.grammar.free(slot)
                if self.controller is not None:
                    self.controller.reset_slot(slot)
                del self._running[slot], self._requests[request.request_id]
                request.slot = None
        return outputs

    def _finish_reason(self, request: _Request) -> str:
        if len(request.output) >= request.params.max_dec_len:
            return "length"
        if request.output and request.output[-1] in self._end_tokens:
            return "end"
        return "stop"


def config_params(config: SpeculativeConfig, index: int) -> RequestParams:
    """Request ``index``'s parameters from the config's sampling defaults: seed ``sampling.seed + index``."""
    s = config.sampling
    # the per-request parameters that have a config default (a grammar constraint has none)
    defaults = {f.name for f in dataclasses.fields(s)}
    names = [
        f.name
        for f in dataclasses.fields(RequestParams)
        if f.name in defaults and f.name not in ("seed", "max_dec_len")
    ]
    return RequestParams(s.seed + index, s.max_dec_len, **{n: copy.deepcopy(getattr(s, n)) for n in names})


def _draft_length_controller(
    config: SpeculativeConfig, state: SpecState, cost_model: StepCostModel | None
) -> DraftLengthController | None:
    """The adaptive draft-length controller when the config asks for one (and drafts exist)."""
    if not (config.adaptive.enabled and config.speculative):
        return None
    cost_model = cost_model if cost_model is not None else make_cost_model(config.adaptive)
    return DraftLengthController.from_config(config, state.max_num_seqs, cost_model, place=state.place)

"""``SpecStep``: one speculative step as two fixed programs a runner builds once and replays."""

from __future__ import annotations

import contextlib
import os
from typing import Callable, Iterator

import numpy as np
import paddle

from fastspec.core.schema import PROBABILITY_STRATEGIES
from fastspec.runtime.adaptive.controller import DraftLengthController
from fastspec.runtime.proposers.base import Proposer
from fastspec.runtime.proposers.tree import write_tree
from fastspec.runtime.sampler import Sampler
from fastspec.runtime.state import SpecState
from fastspec.runtime.step_status import StepStatus, status_tensor

MODES = ("eager", "static", "cuda_graph")


class SpecStep:
    """Propose -> [model] -> sample / verify -> update, as two programs over ``state``.

    A step is ``prepare`` (propose drafts, then pack the output rows on the device) -> the runner's
    model forward -> ``finish`` (the Sampler's forward: verify or sample, then
    ``update_model_status``; a draft-model proposer then keeps the target's hidden states). The
    model sits between the two, so a step is two programs:

    - ``prepare()``: no inputs; reads and writes the state's tensors (and the proposer's buffers)
      in place; returns the step's record (rows, slot kinds, drafts: ``SpecState.pack_slot_rows``);
    - ``finish(logits, hidden=None)``: that record, ``logits [max_rows, V]`` and ``hidden [max_rows, H]``
      in fixed shapes, ``max_rows = max_num_seqs * state.rows_per_slot`` (``K + 1``, or N for a tree
      step); rows past the packed ones are padding (``batch_id_per_token_output`` is -1 there) and are
      ignored. ``pad_rows`` pads a ``[T, ...]`` model output. It returns the status tensor the host
      reads once (``StepStatus``): the step's only wait for the device. While ``logprobs`` is set (the
      runner sets it when some running request asks for log-probabilities) it is a second program that
      also computes them and puts them in the same status (``fastspec.runtime.logprobs``).

    A tree step (``state.num_tree_nodes > 0``, docs/trees.md): ``prepare`` asks the proposer for
    ``config.tree.top_k`` candidates per depth and builds each slot's tree (``build_draft_tree``; a slot's
    rows are its nodes); ``finish`` verifies it with ``verify_draft_tree`` (the accepted path in
    ``state.accept_nodes``) and ``update_model_status`` commits the path's tokens as for a chain.

    Modes: ``"eager"`` runs the same Python code op by op; ``"static"`` compiles each program once
    with ``paddle.jit.to_static`` (``builds`` counts the compilations) and replays it; on a Paddle
    GPU build ``"cuda_graph"`` captures each program once in a ``paddle.device.cuda.graphs.CUDAGraph``
    and replays the graph (``docs/draft_model.md``). What makes that possible: every tensor a step
    touches is allocated before the first build and only written in place; nothing in a program
    reads a tensor's value on the host or branches on it; every shape is fixed.

    Args:
        state: the batch; every program reads and writes its tensors in place.
        sampler: the Sampler of the config.
        proposer: the proposer, or None; modes ``static`` and ``cuda_graph`` need one whose
            ``propose`` keeps to fixed shapes and device tensors (``static_step_safe``).
        mode: ``"eager"`` (op by op, any proposer: what ``generate`` runs by default),
            ``"static"`` or ``"cuda_graph"``.
        controller: an adaptive draft-length controller: ``plan`` opens ``prepare``, ``observe``
            closes ``finish`` (its host-side ``reset_slot`` / ``refresh_costs`` stay between steps).
        grammar: the run's ``GrammarBatch`` when a request has structured output: after the prepare program
            it cuts and extends the constrained slots' drafts and starts their masks (``constrain``; where
            drafts changed the rows are packed and recorded again); ``finish`` waits for the masks.

    Raises:
        ValueError: an unknown mode, a proposer that cannot sit in a static step, or a draft
            model whose widths are not declared (the buffers must exist before the first build).
        RuntimeError: ``cuda_graph`` without a Paddle CUDA build or off a GPU place.
    """

    def __init__(
        self,
        state: SpecState,
        sampler: Sampler,
        proposer: Proposer | None = None,
        mode: str = "static",
        controller: DraftLengthController | None = None,
        grammar=None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"SpecStep: mode must be one of {list(MODES)}, got {mode!r}")
        fixed = mode != "eager"  # a program built once: fixed shapes, buffers allocated before the build
        if fixed and proposer is not None and not proposer.static_step_safe:
            raise ValueError(
                f"SpecStep: {type(proposer).__name__} reads host values while proposing; it cannot run in a "
                "static step (use NgramProposer or DraftModelProposer, or mode 'eager')"
            )
        trees = state.trees
        if trees and (proposer is None or not proposer.drafts_trees):
            raise ValueError(
                f"SpecStep: a tree step (state.num_tree_nodes = {state.num_tree_nodes}) needs a proposer that "
                f"drafts trees (DraftModelProposer, SuffixProposer), got {type(proposer).__name__}"
            )
        # a tree step's draft rows come from the tree itself (fastspec.runtime.trees.first_child_one_hot)
        probabilities = sampler.config.speculative and sampler.strategy in PROBABILITY_STRATEGIES and not trees
        if probabilities and (proposer is None or not proposer.provides_draft_probs):
            raise ValueError(
                f"SpecStep: strategy '{sampler.strategy}' needs a proposer with draft probabilities, "
                f"got {type(proposer).__name__}"
            )
        if mode == "cuda_graph":
            _check_cuda_graphs(state)
        self.state, self.sampler, self.proposer, self.mode = state, sampler, proposer, mode
        self.grammar = grammar
        self.max_rows = state.max_num_seqs * state.rows_per_slot
        self.observes = proposer is not None and proposer.needs_target_hidden
        if proposer is not None:
            proposer.prepare(state)
            if fixed and (not proposer.ready or (probabilities and proposer.draft_probs is None)):
                raise ValueError(
                    "SpecStep: the draft model's buffers must exist before the step is built: declare the head's "
                    "input_hidden_size, hidden_size and vocab_size (attributes, or DraftModelProposer arguments)"
                )
        self.builds = {"prepare": 0, "finish": 0}
        builds = self.builds

        # to_static needs named arguments; the Python bodies run only when a program is built
        def prepare_program(dummy):
            builds["prepare"] += 1
            with state.phases_fixed():
                if controller is not None:
                    controller.plan(state)
                if trees:
                    write_tree(proposer.propose_tree(state, sampler.config.tree.top_k), state)
                elif proposer is not None:
                    proposer.draft(state)
                return state.pack_slot_rows()

        def finish_program_with(logprobs: bool):
            def finish_program(record, logits, hidden=None):
                builds["finish"] += 1
                draft_probs = None
                if probabilities:
                    draft_probs = proposer.draft_probs_rows(state, int(logits.shape[0]), int(logits.shape[-1]))
                sampler.logprobs_width = state.logit_tables.widths.logprobs if logprobs else 0
                sampler(logits, state, draft_probs=draft_probs)
                if self.observes:
                    proposer.observe_target(state, hidden)
                if controller is not None:
                    controller.observe(state)
                extras = proposer.status_fields(state) if proposer is not None else []
                self._extra_widths = [int(np.prod(e.shape)) // state.max_num_seqs for e in extras]
                return status_tensor(state, record, extras, sampler.step_logprobs)

            return finish_program

        compile_ = (lambda f: paddle.jit.to_static(f, full_graph=True)) if mode == "static" else (lambda f: f)
        self._prepare = compile_(prepare_program)
        self._finish = {flag: compile_(finish_program_with(flag)) for flag in (False, True)}  # built when first run
        self.logprobs = False  # the next finish computes log-probabilities too
        self._graphs: dict[str, object] = {}
        self._graph_io: dict[str, tuple] = {}
        self._no_input = paddle.zeros([1], dtype="int32")  # prepare's program takes no real input
        self._record: paddle.Tensor | None = None  # prepare's step record, finish's first input
        self._extra_widths: list[int] = []

    # -- running ----------------------------------------------------------------------------

    def prepare(self) -> None:
        """Proposes and packs this step's rows, reading nothing on the host: the row count comes
        with the step's status (``finish``); a model gets ``max_rows`` rows, -1 slots past the packed ones."""
        if self.proposer is not None:
            self.proposer.draft_on_host(self.state)  # host-side drafters fill their buffers first
        with paddle.no_grad():
            self._record = self._run("prepare", self._prepare, (self._no_input,))
            if self.grammar is not None and self.grammar.constrain(self.state).changed:
                self._record = self.state.pack_slot_rows()  # the grammar's drafts

    def finish(self, logits: paddle.Tensor, hidden: paddle.Tensor | None = None) -> StepStatus:
        """Samples / verifies and updates the state from the model's outputs at the packed rows
        (``[T, V]`` and ``[T, H]``, T up to ``max_rows``; padded here to ``max_rows`` for a built program);
        returns the step's ``StepStatus``: the step's one read of the device."""
        if self._record is None:
            raise ValueError("SpecStep.finish: prepare() must run first")
        if self.observes and hidden is None:
            raise ValueError(f"SpecStep.finish: {type(self.proposer).__name__} needs the target's hidden states")
        if self.mode == "eager":
            args = (self._record, logits) + ((hidden,) if self.observes else ())
        else:
            args = (self._record, self.pad_rows(logits)) + (
                (self.pad_rows(hidden.astype("float32")),) if self.observes else ()
            )
        if self.grammar is not None:
            self.grammar.masks_ready()  # computed while the model ran
        logprobs = self.logprobs
        with paddle.no_grad():
            device_status = self._run("finish_logprobs" if logprobs else "finish", self._finish[logprobs], args)
        status = StepStatus.read(device_status, self.state.num_speculative_tokens, self._extra_widths, logprobs)
        self.state.apply_status(status)
        if self.proposer is not None:
            self.proposer.observe_accepted(self.state, status)
        self._record = None
        return status

    def pad_rows(self, x: paddle.Tensor) -> paddle.Tensor:
        """``[T, ...]`` -> ``[max_rows, ...]`` with zero rows after the packed ones."""
        rows = int(x.shape[0])
        if rows > self.max_rows:
            raise ValueError(f"SpecStep: {rows} rows, at most max_num_seqs * rows_per_slot = {self.max_rows}")
        if rows == self.max_rows:
            return x
        return paddle.concat([x, paddle.zeros([self.max_rows - rows] + list(x.shape[1:]), dtype=x.dtype)], axis=0)

    def _run(self, name: str, program: Callable, args: tuple) -> paddle.Tensor:
        if self.mode == "eager":
            return program(*args)
        with _slices_before_writes_allowed():
            return program(*args) if self.mode == "static" else self._replay_graph(name, program, args)

    def _replay_graph(self, name: str, program: Callable, args: tuple) -> paddle.Tensor:
        """Captures ``program`` once over fixed input buffers, then copies each call's inputs into
        those buffers and replays the graph (Paddle GPU builds only; not runnable on CPU)."""
        from paddle.device.cuda.graphs import CUDAGraph

        if name not in self._graphs:
            # capture records the kernels without running them, so the state is not advanced twice;
            # allocations made while capturing come from the graph's own memory pool
            inputs = tuple(paddle.zeros_like(a) for a in args)
            graph = CUDAGraph()
            graph.capture_begin()
            output = program(*inputs)
            graph.capture_end()
            self._graphs[name], self._graph_io[name] = graph, (inputs, output)
        inputs, output = self._graph_io[name]
        for buffer, a in zip(inputs, args):
            paddle.assign(a, output=buffer)
        self._graphs[name].replay()
        return output


@contextlib.contextmanager
def _slices_before_writes_allowed() -> Iterator[None]:
    """Lets to_static build a program in which a state tensor is sliced and later written in place.

    Paddle refuses that pattern because in dygraph a slice is a view that would see the later
    write, while in a static program it is a copy taken before it. The step's code never reads a
    slice after writing its tensor (it would differ between the eager and static modes, which the
    tests compare bit for bit), so the two agree; the check is switched off only while building.
    """
    key = "stride_in_no_check_dy2st_diff"
    old = os.environ.get(key)
    os.environ[key] = "1"
    try:
        yield
    finally:
        if old is None:
            del os.environ[key]
        else:
            os.environ[key] = old


def _check_cuda_graphs(state: SpecState) -> None:
    from paddle.device.cuda.graphs import is_cuda_graph_supported

    if not is_cuda_graph_supported():
        raise RuntimeError("SpecStep: mode 'cuda_graph' needs a Paddle build with CUDA (this one has none)")
    if not isinstance(state.place, paddle.CUDAPlace):
        raise RuntimeError(f"SpecStep: mode 'cuda_graph' needs the state on a GPU place, got {state.place}")

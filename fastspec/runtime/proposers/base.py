"""The proposer contract: drafts ``[num_reqs, K]`` int64 plus lengths ``[num_reqs]`` int32."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import paddle

from fastspec.runtime.state import SpecState
from fastspec.runtime.step_status import StepStatus

if TYPE_CHECKING:
    from fastspec.runtime.proposers.tree import TreeProposal


class ProposalError(ValueError):
    """A proposer returned drafts of the wrong shape or dtype."""


@dataclass
class Proposal:
    """``tokens[b, :lens[b]]`` are request b's drafts; entries past ``lens[b]`` are ignored."""

    tokens: paddle.Tensor  # int64 [num_reqs, num_speculative_tokens]
    lens: paddle.Tensor  # int32 [num_reqs], each in [0, num_speculative_tokens]


class Proposer(ABC):
    """Drafts up to ``num_speculative_tokens`` tokens for every decode slot.

    Subclasses implement ``propose(state)``; calling the proposer checks the proposal and writes it
    into ``state.draft_tokens[:, 1:]`` and ``state.seq_lens_this_time`` (1 + drafts for a decode
    slot; a prefill slot keeps its prompt length, an inactive slot gets 0). What else a proposer
    needs from the step or gives it is declared by the three class attributes below; the step
    reads them, never probes for methods.
    """

    static_step_safe: ClassVar[bool] = False
    """``propose`` keeps to fixed shapes and device tensors: it can sit in a static or captured step."""
    needs_target_hidden: ClassVar[bool] = False
    """The step hands it the target's hidden states of the packed rows (``observe_target``) after each update."""
    provides_draft_probs: ClassVar[bool] = False
    """It keeps its drafts' probabilities (``draft_probs_rows``), so its drafts can be verified by REJECTION."""
    drafts_trees: ClassVar[bool] = False
    """It offers tree candidates (``propose_tree``: a head's top-k per depth, the suffix cache's trees), so it can
    run in a tree step (docs/trees.md)."""

    def draft_on_host(self, state: SpecState) -> None:
        """Host work before each step's programs (a host-side drafter fills its buffers here)."""

    def observe_accepted(self, state: SpecState, status: StepStatus) -> None:
        """Host work after each step's update: a host-side drafter takes the kept tokens from ``status``
        (the step's one read, ``fastspec.runtime.step_status``), never from the device."""

    def status_fields(self, state: SpecState) -> list[paddle.Tensor]:
        """Device tensors (``[B]`` or ``[B, w]``, integer) the step adds to its status for ``observe_accepted``."""
        return []

    def release_slot(self, slot: int) -> None:
        """The request in ``slot`` left before finishing (aborted, or preempted to resume later in some
        slot): forget what is kept for it (default: nothing; drafts never change what a request emits)."""

    def __init__(self, num_speculative_tokens: int) -> None:
        if num_speculative_tokens < 1:
            raise ValueError(
                f"{type(self).__name__}: num_speculative_tokens must be >= 1, got {num_speculative_tokens}"
            )
        self.num_speculative_tokens = num_speculative_tokens

    @abstractmethod
    def propose(self, state: SpecState) -> Proposal:
        """Drafts for every slot of ``state`` (rows of non-decode slots are ignored)."""

    def __call__(self, state: SpecState) -> Proposal:
        proposal = self.propose(state)
        self.check(proposal, state.max_num_seqs)
        self.write(proposal, state)
        return proposal

    def draft(self, state: SpecState) -> None:
        """This step's drafts into ``state`` (what ``SpecStep`` runs): the checked proposal, written. A proposer
        whose op writes ``draft_tokens`` and ``seq_lens_this_time`` in place itself skips the proposal here."""
        self(state)

    def prepare(self, state: SpecState) -> None:
        """Allocates what the proposer keeps for ``state`` before a step program is built (default: nothing)."""

    @property
    def ready(self) -> bool:
        """Every buffer a static step reads exists (default: True; a draft model may wait for its widths)."""
        return True

    def observe_target(self, state: SpecState, hidden: paddle.Tensor) -> None:
        """With ``needs_target_hidden``: takes the target's hidden states ``[T, H]`` of this step's packed rows."""
        raise NotImplementedError(f"{type(self).__name__} does not read the target's hidden states")

    def propose_tree(self, state: SpecState, top_k: int) -> TreeProposal:
        """With ``drafts_trees``: candidates for ``build_draft_tree`` (``top_k`` per depth or per node), depth up to K."""
        raise NotImplementedError(f"{type(self).__name__} drafts no trees")

    def draft_probs_rows(self, state: SpecState, num_rows: int, vocab_size: int | None = None) -> paddle.Tensor | None:
        """With ``provides_draft_probs``: the drafts' probabilities in packed row order ``[num_rows, V]``."""
        raise NotImplementedError(f"{type(self).__name__} keeps no draft probabilities")

    def check(self, proposal: Proposal, num_reqs: int) -> None:
        """Raises ProposalError unless tokens is int64 [num_reqs, K] and lens int32 [num_reqs]."""
        name, k = type(self).__name__, self.num_speculative_tokens
        if not isinstance(proposal, Proposal):
            raise ProposalError(f"{name}.propose must return a Proposal, got {type(proposal).__name__}")
        shape = list(proposal.tokens.shape)
        if shape != [num_reqs, k]:
            raise ProposalError(
                f"{name}: proposal tokens must have shape [num_reqs, num_speculative_tokens] = [{num_reqs}, {k}], got {shape}"
            )
        if proposal.tokens.dtype != paddle.int64:
            raise ProposalError(f"{name}: proposal tokens must be int64, got {proposal.tokens.dtype}")
        lens_shape = list(proposal.lens.shape)
        if lens_shape not in ([num_reqs], [num_reqs, 1]):
            raise ProposalError(f"{name}: proposal lens must have shape [num_reqs] = [{num_reqs}], got {lens_shape}")
        if proposal.lens.dtype != paddle.int32:
            raise ProposalError(f"{name}: proposal lens must be int32, got {proposal.lens.dtype}")

    def write(self, proposal: Proposal, state: SpecState) -> None:
        """Drafts of decode slots into draft_tokens[:, 1:] (-1 past the length), lengths into seq_lens_this_time
        (``SpecState.write_proposal``; the row packing is left as it is)."""
        state.write_proposal(proposal)

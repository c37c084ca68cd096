"""Draft proposers: ``Proposer`` (the contract), ``NgramProposer``, ``DraftModelProposer`` (MTP /
EAGLE3 heads, hybrid with n-gram; ``Eagle3DraftHead``) and ``ExtractHiddenStatesProposer``."""

from fastspec.runtime.proposers.base import Proposal, ProposalError, Proposer
from fastspec.runtime.proposers.draft_model import DraftModelProposer, DraftShapeError
from fastspec.runtime.proposers.eagle3 import Eagle3DraftHead, concat_aux_rows
from fastspec.runtime.proposers.extract_hidden import ExtractHiddenStatesProposer
from fastspec.runtime.proposers.ngram import NgramProposer


def make_proposer(config, draft_model=None):
    """The proposer a config asks for, or None for methods without drafts.

    Methods ``mtp`` and ``eagle3`` need ``draft_model`` (a Paddle draft layer, see
    ``DraftModelProposer``; for eagle3 one whose first step takes the target's aux states, such
    as ``Eagle3DraftHead``).
    """
    if config.method == "ngram":
        return NgramProposer.from_config(config)
    if config.method in ("mtp", "eagle3"):
        if draft_model is None:
            raise ValueError(
                f"method '{config.method}' needs a draft model: pass generate(..., draft_model=layer) or "
                "proposer=DraftModelProposer(...)"
            )
        return DraftModelProposer.from_config(config, draft_model)
    return None


__all__ = [
    "DraftModelProposer",
    "DraftShapeError",
    "Eagle3DraftHead",
    "concat_aux_rows",
    "ExtractHiddenStatesProposer",
    "NgramProposer",
    "Proposal",
    "ProposalError",
    "Proposer",
    "make_proposer",
]

"""Draft proposers: ``Proposer`` (the contract), ``NgramProposer``, ``DraftModelProposer`` (MTP /
EAGLE heads, hybrid with n-gram) and ``ExtractHiddenStatesProposer``."""

from fastspec.proposers.base import Proposal, ProposalError, Proposer
from fastspec.proposers.draft_model import DraftModelProposer
from fastspec.proposers.extract_hidden import ExtractHiddenStatesProposer
from fastspec.proposers.ngram import NgramProposer


def make_proposer(config, draft_model=None):
    """The proposer a config asks for, or None for methods without drafts.

    Method ``mtp`` needs ``draft_model`` (a Paddle draft layer, see ``DraftModelProposer``).
    """
    if config.method == "ngram":
        return NgramProposer.from_config(config)
    if config.method == "mtp":
        if draft_model is None:
            raise ValueError(
                "method 'mtp' needs a draft model: pass generate(..., draft_model=layer) or proposer=DraftModelProposer(...)"
            )
        return DraftModelProposer.from_config(config, draft_model)
    return None


__all__ = [
    "DraftModelProposer",
    "ExtractHiddenStatesProposer",
    "NgramProposer",
    "Proposal",
    "ProposalError",
    "Proposer",
    "make_proposer",
]

"""Draft proposers: ``Proposer`` (the contract) and ``NgramProposer``."""

from fastspec.proposers.base import Proposal, ProposalError, Proposer
from fastspec.proposers.ngram import NgramProposer


def make_proposer(config):
    """The proposer a config asks for, or None for methods without drafts."""
    if config.method == "ngram":
        return NgramProposer.from_config(config)
    if config.method == "mtp":
        raise NotImplementedError("method 'mtp' needs a draft (MTP) head; the Python runner does not ship one yet")
    return None


__all__ = ["NgramProposer", "Proposal", "ProposalError", "Proposer", "make_proposer"]

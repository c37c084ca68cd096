"""Reference ``DraftChoice``: per slot, which of two drafters to trust, from what each would have got accepted.

Both drafters draft every step; after the step the kept tokens say, for each draft, how many of
its tokens the target agreed with (the longest common prefix with the kept tokens: exact for the
draft that was verified, a lower bound for the other when it ran past the kept tokens). A
running average per slot and drafter (weight ``rate`` on the newest step) says which has been
right lately. The rule (``first_wins``): the preferred drafter's draft when it has one, the other's
when it has none; without a preference (equal averages, a new request) the longer draft, the
second's on ties. Suffix decoding uses it with the suffix draft first and anchored n-gram second
(docs/suffix.md): a whole-file rewrite copies from a place, which the anchor follows, and a patch
repeats patterns that only the suffix trees see; the averages find out which case a request is.

This numpy class is the rule's contract. The proposer's ``DraftChoice``
(``fastspec/runtime/proposers/draft_choice.py``) runs ``observe`` natively, and ``SuffixCache``
built with ``anchored_ngram`` keeps the same averages per request (``custom_ops/suffix/draft_choice.h``).
"""

from __future__ import annotations

import numpy as np

from fastspec.core.draft_choice import DraftAverages


def first_wins(preference: np.ndarray, len_first: np.ndarray, len_second: np.ndarray) -> np.ndarray:
    """bool [B]: take the first drafter's draft. ``preference`` int [B]: 1 first, -1 second, 0 none."""
    return (
        ((preference == 1) & (len_first > 0))
        | ((preference == -1) & (len_second == 0))
        | ((preference == 0) & (len_first > len_second))
    )


def accepted(drafts: np.ndarray, lens: np.ndarray, kept: np.ndarray, kept_num: np.ndarray) -> np.ndarray:
    """int [B]: the longest common prefix of ``drafts[b, :lens[b]]`` and ``kept[b, :kept_num[b]]``."""
    width = min(drafts.shape[1], kept.shape[1])
    cols = np.arange(width)[None, :]
    valid = (cols < lens[:, None]) & (cols < kept_num[:, None])
    same = (drafts[:, :width] == kept[:, :width]) & valid
    return np.cumprod(same, axis=1).sum(axis=1)


class DraftChoice(DraftAverages):
    """Running averages of two drafters' accepted tokens per slot."""

    def observe(self, mask: np.ndarray, first: tuple, second: tuple, kept: np.ndarray, kept_num: np.ndarray) -> None:
        """``first`` / ``second``: (drafts [B, W], lens [B]) offered this step; rows where ``mask``."""
        for column, (drafts, lens) in enumerate((first, second)):
            got = accepted(drafts, lens, kept, kept_num)
            old = self.average[:, column]
            self.average[:, column] = np.where(mask, old + self.rate * (got - old), old)

"""``DraftChoice`` for the proposer: the reference class (``fastspec/reference/draft_choice.py``,
the rule) with ``observe`` as one native call over all slots (``custom_ops/suffix/draft_choice.h``)."""

from __future__ import annotations

import numpy as np

from fastspec.arrays import module
from fastspec.reference.draft_choice import DraftChoice as ReferenceDraftChoice
from fastspec.reference.draft_choice import accepted, first_wins

__all__ = ["DraftChoice", "accepted", "first_wins"]


class DraftChoice(ReferenceDraftChoice):
    """The reference's averages and preference; ``observe`` scores and averages in C++."""

    def observe(self, mask: np.ndarray, first: tuple, second: tuple, kept: np.ndarray, kept_num: np.ndarray) -> None:
        rows = [(_rows(tokens, np.int64, 2), _rows(lens, np.int32, 1)) for tokens, lens in (first, second)]
        module().draft_choice_observe(self.average, _rows(mask, bool, 1), *rows[0], *rows[1], _rows(kept, np.int64, 2),
                                      _rows(kept_num, np.int32, 1), self.rate)


def _rows(values, dtype, ndim: int) -> np.ndarray:
    """Contiguous ``dtype`` with ``ndim`` dimensions (the proposer's arrays already are: no copy)."""
    array = np.ascontiguousarray(values, dtype=dtype)
    if array.ndim != ndim:
        raise ValueError(f"DraftChoice.observe: expected a {ndim}-D array, got shape {array.shape}")
    return array

"""``DraftChoice`` for the proposer: per slot, which of two drafters to trust, from a running average
of what each would have got accepted. The rule is ``fastspec/reference/draft_choice.py`` (its
contract, in numpy); here ``observe`` is one native call over all slots (``custom_ops/suffix/draft_choice.h``)."""

from __future__ import annotations

import numpy as np

from fastspec.arrays import module
from fastspec.core.draft_choice import DraftAverages

__all__ = ["DraftChoice"]


class DraftChoice(DraftAverages):
    """Running averages of two drafters' accepted tokens per slot (weight ``rate`` on the newest step)."""

    def observe(self, mask: np.ndarray, first: tuple, second: tuple, kept: np.ndarray, kept_num: np.ndarray) -> None:
        """``first`` / ``second``: (drafts [B, W], lens [B]) offered this step; rows where ``mask``; scored and
        averaged in C++."""
        rows = [(_rows(tokens, np.int64, 2), _rows(lens, np.int32, 1)) for tokens, lens in (first, second)]
        module().draft_choice_observe(
            self.average,
            _rows(mask, bool, 1),
            *rows[0],
            *rows[1],
            _rows(kept, np.int64, 2),
            _rows(kept_num, np.int32, 1),
            self.rate,
        )


def _rows(values, dtype, ndim: int) -> np.ndarray:
    """Contiguous ``dtype`` with ``ndim`` dimensions (the proposer's arrays already are: no copy)."""
    array = np.ascontiguousarray(values, dtype=dtype)
    if array.ndim != ndim:
        raise ValueError(f"DraftChoice.observe: expected a {ndim}-D array, got shape {array.shape}")
    return array

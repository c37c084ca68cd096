"""What both ``DraftChoice`` classes hold: per slot, a running average of two drafters' accepted tokens
(weight ``rate`` on the newest step) and the preference it gives. ``observe``, which updates the
averages, is each one's own: numpy in ``fastspec/reference/draft_choice.py`` (the contract), one native
call in ``fastspec/runtime/proposers/draft_choice.py``."""

from __future__ import annotations

import numpy as np


class DraftAverages:
    """Running averages of two drafters' accepted tokens per slot."""

    def __init__(self, slots: int, rate: float = 0.3) -> None:
        self.rate = rate
        self.average = np.zeros((slots, 2))

    def reset(self, slots) -> None:
        self.average[slots] = 0.0

    def preference(self) -> np.ndarray:
        """int32 [B]: 1 the first drafter, -1 the second, 0 neither."""
        return np.sign(self.average[:, 0] - self.average[:, 1]).astype(np.int32)

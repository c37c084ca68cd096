"""Token-sequence tables (a request's bad words, its stop sequences): one row of int64 entries holding its
sequences one after another, split at the negative entries."""

from __future__ import annotations

import numpy as np


def table_sequences(table_row: np.ndarray) -> list[list[int]]:
    """The sequences of one table row: the row split at its negative entries (empty pieces dropped)."""
    sequences, current = [], []
    for token in (int(t) for t in table_row):
        if token < 0:
            if current:
                sequences.append(current)
            current = []
        else:
            current.append(token)
    return sequences + ([current] if current else [])

"""``SlotWrites``: a slot's request parameters written to the device only when they change."""

from __future__ import annotations

from typing import Callable

import numpy as np
import paddle


class SlotWrites:
    """Writes ``tensor[slot] = value`` for tensors only the host writes (a request's parameters, read by the
    ops, never written by them), skipping the write when the slot already holds exactly that value.

    A server's requests mostly share their parameters, and each write is a device op (on a GPU a launch and
    a copy), so a new request in a reused slot writes only what differs: its seed, its lengths. Values are
    compared by their bytes in the tensor's dtype, so a skipped write is one that would store the same bits.
    """

    def __init__(self, slots: int) -> None:
        self._held: list[dict[int, bytes]] = [{} for _ in range(slots)]

    def write(
        self,
        tensor: paddle.Tensor,
        slot: int,
        value: np.ndarray,
        copy: Callable[[np.ndarray], paddle.Tensor] | None = None,
    ) -> None:
        """``value``: numpy of the tensor's dtype, 0-d for one entry, 1-d for a row. ``copy`` turns it into a
        device tensor (``HostCopies``: a row, or an int64 entry that must keep all 64 bits); without it the
        entry is written as a Python scalar."""
        key = value.tobytes()
        held = self._held[slot]
        if held.get(id(tensor)) == key:
            return
        tensor[slot] = copy(value) if copy is not None else value.item()
        held[id(tensor)] = key

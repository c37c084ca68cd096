"""``StepStatus``: what the host learns of a step, from one read of one small device tensor.

The step writes every per-slot figure the host loop needs into a single int64 ``[B, W]`` tensor
after the update (``status_tensor``: the ``step_status`` op, docs/ops/step_status.md); ``SpecStep.finish``
reads it once (``StepStatus.read``) and the loop's statistics, finished slots, outputs and host-side
drafters take it from there. Columns:

    rows (this step's output rows), decode (1: a decode slot this step), drafts [K] (the drafts the
    step verified, -1 past them), accept_num, accept_tokens [K + 1], stopped, blocked, encoder,
    decoder (after the update), then whatever the proposer adds (``Proposer.status_fields``), then, in a
    step where some request asks for log-probabilities, their keys: [K + 1] records of 1 + w
    (``fastspec.runtime.logprobs``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
import paddle

from fastspec import ops
from fastspec.runtime.logprobs import token_logprobs
from fastspec.runtime.state import SpecState


def status_tensor(
    state: SpecState, record: paddle.Tensor, extras: list[paddle.Tensor], logprobs: paddle.Tensor | None = None
) -> paddle.Tensor:
    """int64 ``[B, W]`` (``[B, 2, K + 4]`` when nothing follows the state): the step's ``record``
    (``SpecState.pack_slot_rows``: rows, decode, drafts) and the state after the update, in one op
    (``step_status``), then ``extras`` ([B, w] each), then ``logprobs`` (``Sampler.step_logprobs``) when given."""
    status = ops.step_status(
        record,
        state.accept_num,
        state.accept_tokens,
        state.stop_flags,
        state.is_block_step,
        state.seq_lens_encoder,
        state.seq_lens_decoder,
    )
    if not extras and logprobs is None:
        return status
    parts = [status.reshape([state.max_num_seqs, -1])]
    parts += [e.reshape([state.max_num_seqs, -1]).astype("int64") for e in extras]
    parts += [] if logprobs is None else [logprobs]
    return paddle.concat(parts, axis=1)


@functools.cache
def _columns(k: int, extra_widths: tuple[int, ...]) -> tuple[int, ...]:
    """Where each part of a status row starts (and the last ends): the module doc's columns."""
    return tuple(np.cumsum([0, 1, 1, k, 1, k + 1, 1, 1, 1, 1, *extra_widths]).tolist())


@dataclass
class StepStatus:
    """One step as the host sees it (numpy arrays over the ``B`` slots; see the module doc)."""

    rows: np.ndarray
    decode: np.ndarray
    drafts: np.ndarray
    accept_num: np.ndarray
    accept_tokens: np.ndarray
    stopped: np.ndarray
    blocked: np.ndarray
    encoder: np.ndarray
    decoder: np.ndarray
    extras: list = field(default_factory=list)
    logprobs: np.ndarray | None = None  # int64 keys [B, K + 1, 1 + w] when the step computed them

    @classmethod
    def read(cls, status: paddle.Tensor, k: int, extra_widths: list[int], logprobs: bool = False) -> StepStatus:
        """The one device-to-host read of a step; ``logprobs``: the status ends with their keys."""
        a = status.numpy()
        a = a.reshape(a.shape[0], -1)
        col = _columns(k, tuple(extra_widths))
        part = [np.ascontiguousarray(a[:, col[i] : col[i + 1]]) for i in range(len(col) - 1)]
        keys = a[:, col[-1] :].reshape(a.shape[0], k + 1, -1) if logprobs else None
        one = lambda p: p[:, 0].astype(np.int32)  # noqa: E731  (the state's int32 counters)
        return cls(
            one(part[0]),
            one(part[1]) > 0,
            part[2],
            one(part[3]),
            part[4],
            one(part[5]) > 0,
            one(part[6]) > 0,
            one(part[7]),
            one(part[8]),
            part[9:],
            keys,
        )

    @property
    def num_rows(self) -> int:
        return int(self.rows.sum())

    def logprobs_of(self, slot: int, n: int) -> list:
        """Slot ``slot``'s emitted tokens this step, each as ``(logprob, [(token id, logprob), ...])`` with
        its row's ``n`` most likely tokens (``fastspec.runtime.logprobs.token_logprobs``)."""
        if self.logprobs is None:
            raise ValueError("StepStatus.logprobs_of: this step computed no log-probabilities")
        return token_logprobs(self.logprobs[slot], max(int(self.accept_num[slot]), 0), n)

    def drafts_of(self, slot: int) -> np.ndarray:
        """The drafts slot ``slot`` offered this step (none for a prefill)."""
        n = int(self.rows[slot]) - 1 if self.decode[slot] else 0
        return self.drafts[slot, : max(n, 0)]

"""Tensor-parallel ranks: every rank runs its own ``SpecEngine`` and emits the same tokens.

A tensor-parallel runner gives each rank a shard of the model; with a vocabulary-parallel head
each rank computes the logits of its own slice of the vocabulary, and the ranks all-gather them
(``gather_vocab_shards``), so every rank holds the same ``[T, V]`` logits, bit for bit. Every
rank keeps its own copy of the state and runs the step on them: the draws come from each request's
own seed and position (docs/ops/conventions.md), so the ranks decide the same tokens without
broadcasting what they sampled. ``check_ranks_agree`` is the check that they did (a digest of
each step's outputs, all-gathered): what catches a rank-dependent seed, or logits that differ
between ranks. See docs/serving.md.
"""

from __future__ import annotations

import hashlib
from typing import Sequence

import numpy as np
import paddle
import paddle.distributed as dist

__all__ = ["RankDivergenceError", "check_ranks_agree", "gather_vocab_shards", "outputs_digest"]


class RankDivergenceError(RuntimeError):
    """Tensor-parallel ranks emitted different tokens in the same step."""


def gather_vocab_shards(shard: paddle.Tensor, group=None) -> paddle.Tensor:
    """``[T, V / world]`` logits of this rank's vocabulary slice (rank r holds ids ``[r V / world, (r + 1) V / world)``)
    -> ``[T, V]``: the slices all-gathered and concatenated in rank order, the same on every rank."""
    parts: list = []
    dist.all_gather(parts, shard, group=group)
    return paddle.concat(parts, axis=-1)


def outputs_digest(outputs: Sequence) -> int:
    """A 63-bit digest of one step's ``RequestOutput`` list (request, tokens, finished, reason), in
    request order; the same on every rank that emitted the same."""
    h = hashlib.blake2b(digest_size=8)
    for out in sorted(outputs, key=lambda o: repr(o.request_id)):
        h.update(repr((out.request_id, list(map(int, out.new_tokens)), out.finished, out.finish_reason)).encode())
    return int.from_bytes(h.digest(), "little") >> 1


def check_ranks_agree(outputs: Sequence, step: int | None = None, group=None) -> None:
    """All-gathers the digest of this step's outputs; raises ``RankDivergenceError`` on every rank
    when any two ranks differ (the message names the ranks that differ from rank 0)."""
    mine = paddle.to_tensor(np.array([outputs_digest(outputs)], dtype=np.int64))
    digests: list = []
    dist.all_gather(digests, mine, group=group)
    values = [int(d.numpy()[0]) for d in digests]
    if len(set(values)) > 1:
        differ = [r for r, v in enumerate(values) if v != values[0]]
        where = f" at step {step}" if step is not None else ""
        raise RankDivergenceError(
            f"tensor-parallel ranks {differ} emitted other tokens than rank 0{where} "
            "(a rank-dependent seed or sampling parameter, or logits that differ between ranks)"
        )

"""The sampling parameters that act on the logits (repetition, presence and frequency penalties,
logit bias, bad words, min_tokens, stop token ids) and the stops (stop token ids, stop sequences):
their checks when a request is inserted, and the per-slot tables on the device that
``process_logits`` and ``update_model_status`` read (docs/ops/process_logits.md,
docs/ops/update_model_status.md).

The tables have fixed widths (``TableWidths``), so a step's call has the same shapes whatever
its requests ask for: it can sit in a static program or a CUDA Graph.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import paddle

from fastspec import ops

LOGIT_BIAS_LIMIT = 100.0  # a bias is clamped to [-100, 100], as the OpenAI API does
# Parameters a request may name but that nothing applies yet: any value but the one that turns them
# off is refused, so that no request silently gets less than it asked for.
NOT_APPLIED_YET: dict[str, Any] = {}  # none today


class InvalidRequestError(ValueError):
    """A request's sampling parameter is out of range; the message names the request and the parameter."""


@dataclass(frozen=True)
class TableWidths:
    """How much of each list a request may bring (the tables' widths)."""

    stop_token_ids: int = 16
    logit_bias: int = 64
    bad_words: int = 256  # entries of all its bad words, one -1 after each
    stop: int = 64  # entries of all its stop sequences, one -1 after each (the XPU takes up to 64)
    logprobs: int = 20  # most likely tokens listed with each emitted one (the OpenAI API's limit)


def check_request(params: Any, request: Any, vocab_size: int | None = None, widths: TableWidths | None = None) -> None:
    """Raises ``InvalidRequestError`` naming ``request`` and the parameter when one is out of range:
    a repetition penalty <= 0, a penalty that is not finite, min_p outside [0, 1], a token id outside
    the vocabulary, an empty sequence, a negative min_tokens, logprobs outside [0, width], a list over its width; and a
    parameter of ``NOT_APPLIED_YET`` set to anything but its neutral value."""
    widths = widths or TableWidths()

    def fail(name: str, message: str) -> None:
        raise InvalidRequestError(f"request {request}: {name} {message}")

    def token(name: str, value: Any) -> None:
        if (
            not isinstance(value, (int, np.integer))
            or isinstance(value, bool)
            or value < 0
            or (vocab_size is not None and value >= vocab_size)
        ):
            limit = f"[0, {vocab_size})" if vocab_size is not None else "a token id >= 0"
            fail(name, f"holds {value!r}, not in {limit}")

    def sequences(name: str, value: Any, width: int) -> None:
        for sequence in value:
            if len(sequence) == 0:
                fail(name, "holds an empty sequence")
            for t in sequence:
                token(name, t)
        if sum(len(s) + 1 for s in value) > width:
            fail(name, f"takes more than {width} entries (each sequence and a separator)")

    def at_most(name: str, count: int, what: str, width: int) -> None:
        if count > width:
            fail(name, f"has {count} {what}, at most {width}")

    def number(name: str, value: Any) -> float:
        if not isinstance(value, (int, float, np.floating)) or isinstance(value, bool) or not math.isfinite(value):
            fail(name, f"must be a finite number, got {value!r}")
        return float(value)

    if number("repetition_penalty", params.repetition_penalty) <= 0:
        fail("repetition_penalty", f"must be > 0, got {params.repetition_penalty}")
    number("presence_penalty", params.presence_penalty)
    number("frequency_penalty", params.frequency_penalty)
    if not 0.0 <= number("min_p", params.min_p) <= 1.0:
        fail("min_p", f"must be in [0, 1], got {params.min_p}")
    for key, value in dict(params.logit_bias).items():
        token("logit_bias", key)
        number("logit_bias", value)
    at_most("logit_bias", len(params.logit_bias), "entries", widths.logit_bias)
    sequences("bad_words", params.bad_words, widths.bad_words)
    if not isinstance(params.min_tokens, (int, np.integer)) or params.min_tokens < 0:
        fail("min_tokens", f"must be an integer >= 0, got {params.min_tokens!r}")
    for t in params.stop_token_ids:
        token("stop_token_ids", t)
    at_most("stop_token_ids", len(params.stop_token_ids), "ids", widths.stop_token_ids)
    sequences("stop", params.stop, widths.stop)
    n = params.logprobs
    if n is not None and (not isinstance(n, (int, np.integer)) or isinstance(n, bool) or not 0 <= n <= widths.logprobs):
        fail("logprobs", f"must be None or an integer in [0, {widths.logprobs}], got {n!r}")
    for name, off in NOT_APPLIED_YET.items():
        if getattr(params, name) != off:
            fail(name, f"is not applied yet: only {off!r} is taken, got {getattr(params, name)!r}")


def sequences_row(sequences: Sequence[Sequence[int]], width: int) -> np.ndarray:
    """A request's bad words or stop sequences as one table row: each sequence followed by -1, then -1 to the width."""
    row = np.full(width, -1, np.int64)
    at = 0
    for sequence in sequences:
        row[at : at + len(sequence)] = sequence
        at += len(sequence) + 1
    return row


class LogitTables:
    """Each slot's logit parameters and stops on the device: float32 [B] penalties, int64 [B] min_tokens and
    the padded [B, width] tables of stop token ids, bias entries, bad words and stop sequences (-1: none)."""

    def __init__(self, max_num_seqs: int, place: Any, widths: TableWidths | None = None) -> None:
        self.widths = w = widths or TableWidths()
        b = max_num_seqs

        def full(shape, value, dtype):
            return paddle.to_tensor(np.full(shape, value, dtype=dtype), place=place)

        self.repetition_penalty = full([b], 1.0, "float32")
        self.presence_penalty = full([b], 0.0, "float32")
        self.frequency_penalty = full([b], 0.0, "float32")
        self.min_tokens = full([b], 0, "int64")
        self.stop_token_ids = full([b, w.stop_token_ids], -1, "int64")
        self.logit_bias_ids = full([b, w.logit_bias], -1, "int64")
        self.logit_bias_values = full([b, w.logit_bias], 0.0, "float32")
        self.bad_words = full([b, w.bad_words], -1, "int64")
        self.stop_sequences = full([b, w.stop], -1, "int64")

    def write(self, slot: int, params: Any, copy: Any, writes: Any) -> None:
        """Slot ``slot``'s rows of every table from a checked request's parameters; ``copy`` turns a host
        array into a device tensor (``SpecState.staging``: nothing kept per call); ``writes`` (``SlotWrites``)
        skips the rows the slot already holds."""
        w = self.widths
        writes.write(self.repetition_penalty, slot, np.float32(params.repetition_penalty))
        writes.write(self.presence_penalty, slot, np.float32(params.presence_penalty))
        writes.write(self.frequency_penalty, slot, np.float32(params.frequency_penalty))
        writes.write(self.min_tokens, slot, np.int64(params.min_tokens))
        stops = np.full(w.stop_token_ids, -1, np.int64)
        stops[: len(params.stop_token_ids)] = list(params.stop_token_ids)
        ids, values = np.full(w.logit_bias, -1, np.int64), np.zeros(w.logit_bias, np.float32)
        for k, (token, bias) in enumerate(sorted(dict(params.logit_bias).items())):
            ids[k], values[k] = token, min(max(float(bias), -LOGIT_BIAS_LIMIT), LOGIT_BIAS_LIMIT)
        for name, row in (
            ("stop_token_ids", stops),
            ("logit_bias_ids", ids),
            ("logit_bias_values", values),
            ("bad_words", sequences_row(params.bad_words, w.bad_words)),
            ("stop_sequences", sequences_row(params.stop, w.stop)),
        ):
            writes.write(getattr(self, name), slot, row, copy)

    def apply(self, logits: paddle.Tensor, state: Any, rows: paddle.Tensor) -> paddle.Tensor:
        """``logits`` as float32 with every row's parameters applied, each row with its own history (the
        slot's prompt, output and drafts before it; a tree node's ancestors). Float32 logits are
        processed in place."""
        logits = logits if logits.dtype == paddle.float32 else logits.astype("float32")
        trees = state.trees
        ops.process_logits(
            logits,
            state.token_ids_all,
            state.prompt_lens,
            state.step_idx,
            state.draft_tree_tokens if trees else state.draft_tokens,
            rows,
            state.cu_seqlens_q_output,
            self.repetition_penalty,
            self.presence_penalty,
            self.frequency_penalty,
            self.min_tokens,
            state.end_tokens,
            self.stop_token_ids,
            self.logit_bias_ids,
            self.logit_bias_values,
            self.bad_words,
            draft_parents=state.draft_tree_parents if trees else None,
        )
        return logits

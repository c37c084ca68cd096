"""``SpecState``: the per-request device tensors of docs/ops/conventions.md, allocated once.

Every tensor is sized for ``max_num_seqs`` slots and ``max_model_len`` positions when the
state is built and is only ever updated in place afterwards, so the addresses a CUDA Graph
captured stay valid across steps. Inserting, reading and freeing requests happen between
steps, on the host side of the loop.
"""

from __future__ import annotations

import contextlib
from dataclasses import KW_ONLY, dataclass, field
from typing import Hashable, Iterator, NamedTuple, Sequence

import numpy as np
import paddle

from fastspec import ops
from fastspec.runtime.sampling_params import LogitTables, TableWidths, check_request
from fastspec.runtime.slot_writes import SlotWrites


class SamplingSets(NamedTuple):
    """Each slot's parameters of the sampling ops' sets: ``top_p`` float32, ``top_k`` int32, ``min_p`` float32 [B]."""

    top_p: paddle.Tensor
    top_k: paddle.Tensor
    min_p: paddle.Tensor


@dataclass
class RequestParams:
    """Sampling parameters of one request (defaults come from ``SamplingConfig``)."""

    seed: int
    max_dec_len: int
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    _: KW_ONLY  # the rest by name: positions would shift as parameters are added
    # what a server exposes besides (docs/ops/process_logits.md); each default turns it off
    repetition_penalty: float = 1.0  # > 0: a logit of a token in the prompt or output is divided (> 0) or multiplied
    presence_penalty: float = 0.0  # subtracted once from a token in the output
    frequency_penalty: float = 0.0  # subtracted once per occurrence in the output
    # in [0, 1]: after temperature, keep the tokens whose probability is at least min_p times the largest
    min_p: float = 0.0
    logit_bias: dict[int, float] = field(default_factory=dict)  # token id -> added to its logit, clamped to [-100, 100]
    bad_words: list[list[int]] = field(default_factory=list)  # a sequence's last token is banned after the rest
    min_tokens: int = 0  # end and stop tokens are banned until this many tokens are out
    stop_token_ids: list[int] = field(default_factory=list)  # end the request like an end token (kept)
    # token sequences: the request ends after the first one its output ends with (kept), once min_tokens are out
    stop: list[list[int]] = field(default_factory=list)
    logprobs: int | None = None  # n >= 0: each token's log-probability and the n most likely
    # a grammar the output must follow: exactly one of json_schema (a dict or JSON string), json_object (True),
    # regex, lark (docs/structured_output.md); needs generate(..., tokenizer=...)
    structured_output: dict | None = None


class HostCopies:
    """Host arrays as device tensors, for a write into a buffer that follows at once.

    Paddle 3.3's ``paddle.to_tensor`` keeps about 112 bytes per call for the life of the process,
    which a server inserting requests for days cannot afford; refilling one staging tensor per shape
    and dtype with ``set_value`` keeps nothing (and every bit of an int64). The tensor returned is
    the staging tensor itself: the next call of the same shape overwrites it.
    """

    def __init__(self, place) -> None:
        self.place = place
        self._staging: dict = {}

    def __call__(self, array) -> paddle.Tensor:
        array = np.ascontiguousarray(array)
        key = (array.shape, array.dtype.str)
        staging = self._staging.get(key)
        if staging is None:
            staging = self._staging[key] = paddle.to_tensor(array, place=self.place)
        else:
            staging.set_value(array)
        return staging


class HostSlots:
    """The host's view of each slot, kept without reading the device: written by ``insert`` / ``free``
    and by each step's ``StepStatus`` (``SpecState.apply_status``).

    prompts: each slot's prompt (None when free); stopped, blocked: bool [B]; encoder, decoder: int [B]
    (``seq_lens_encoder`` / ``seq_lens_decoder`` after the last update or insert).
    """

    def __init__(self, max_num_seqs: int) -> None:
        b = max_num_seqs
        self.prompts: list[np.ndarray | None] = [None] * b
        self.stopped = np.ones(b, bool)
        self.blocked = np.zeros(b, bool)
        self.encoder = np.zeros(b, np.int64)
        self.decoder = np.zeros(b, np.int64)
        self._kept: list[list[np.ndarray]] = [[] for _ in range(b)]

    def insert(self, slot: int, prompt: np.ndarray, output: np.ndarray | None = None) -> None:
        """``output``: what a resumed request already generated (its prefill covers prompt + output)."""
        done = [] if output is None or len(output) == 0 else [np.asarray(output, np.int64).copy()]
        self.prompts[slot], self._kept[slot] = prompt.copy(), done
        self.stopped[slot], self.blocked[slot] = False, False
        self.encoder[slot], self.decoder[slot] = len(prompt) + sum(map(len, done)), 0

    def free(self, slot: int) -> None:
        self.prompts[slot], self._kept[slot] = None, []
        self.stopped[slot], self.blocked[slot] = True, False
        self.encoder[slot] = self.decoder[slot] = 0

    def apply(self, status) -> None:
        for slot in np.flatnonzero(status.accept_num > 0).tolist():
            self._kept[slot].append(status.accept_tokens[slot, : status.accept_num[slot]])
        self.stopped[:], self.blocked[:] = status.stopped, status.blocked
        self.encoder[:], self.decoder[:] = status.encoder, status.decoder

    def output(self, slot: int) -> np.ndarray:
        """The tokens the slot's request kept so far, as the statuses reported them."""
        kept = self._kept[slot]
        return np.concatenate(kept) if kept else np.zeros(0, np.int64)


class SpecState:
    """The batch of request slots: the ops' per-request tensors (docs/ops/conventions.md) plus the sampling parameters.

    Attributes (``B`` = max_num_seqs, ``L`` = max_model_len, ``K`` = num_speculative_tokens):
        token_ids_all int64 [B, L]; prompt_lens, step_idx, max_dec_len, seed int64 [B];
        seq_lens_encoder, seq_lens_decoder, seq_lens_this_time, accept_num, draft_token_num,
        top_k, reasoning_status int32 [B]; stop_flags, is_block_step bool [B];
        temperature, top_p float32 [B]; sample_temperature, sample_top_p float32, sample_top_k int32 [B] (what
        the sampler uses, written by ``insert``: a greedy request's are 1, 0 and 1); min_p float32 [B] (0: off);
        draft_tokens, accept_tokens int64 [B, K + 1];
        end_tokens int64 [E]; cu_seqlens_q_output int32 [B + 1]; ngram_anchor int64 [B] (anchored n-gram
        drafting: where each slot's drafts were copied from, -1 for none; reset for a new request);
        batch_id_per_token_output int32 [B * R] (rows past the packed ones are -1; ``R = rows_per_slot``).

    Draft trees (``num_tree_nodes = N > 0``, docs/trees.md): draft_tree_tokens int64 [B, N] (node 0 the
    last committed token), draft_tree_parents, draft_tree_depths int32 [B, N] (``build_draft_tree``'s) and
    accept_nodes int32 [B, K + 1] (the accepted path, ``verify_draft_tree``'s); a slot then has up to N
    rows. Without trees these are None.
    """

    def __init__(
        self,
        max_num_seqs: int,
        max_model_len: int,
        num_speculative_tokens: int,
        end_tokens: Sequence[int],
        place: paddle.Place | str | None = None,
        num_tree_nodes: int = 0,
        vocab_size: int | None = None,
        table_widths: TableWidths | None = None,
    ) -> None:
        if max_num_seqs < 1 or max_model_len < 2 or num_speculative_tokens < 0 or num_tree_nodes < 0:
            raise ValueError(
                f"SpecState: need max_num_seqs >= 1, max_model_len >= 2, num_speculative_tokens >= 0, num_tree_nodes >= 0; "
                f"got {max_num_seqs}, {max_model_len}, {num_speculative_tokens}, {num_tree_nodes}"
            )
        if len(end_tokens) == 0:
            raise ValueError("SpecState: end_tokens must hold at least one token id")
        self.max_num_seqs = b = int(max_num_seqs)
        self.max_model_len = length = int(max_model_len)
        self.num_speculative_tokens = k = int(num_speculative_tokens)
        self.place = _place(place)
        self.num_tree_nodes = n = int(num_tree_nodes)
        self.rows_per_slot = max(k + 1, n)  # output rows a decode slot may use

        def full(shape, value, dtype):
            return paddle.to_tensor(np.full(shape, value, dtype=dtype), place=self.place)

        self.token_ids_all = full([b, length], -1, "int64")
        self.prompt_lens = full([b], 0, "int64")
        self.step_idx = full([b], 0, "int64")
        self.max_dec_len = full([b], 0, "int64")
        self.seed = full([b], 0, "int64")
        self.seq_lens_encoder = full([b], 0, "int32")
        self.seq_lens_decoder = full([b], 0, "int32")
        self.seq_lens_this_time = full([b], 0, "int32")
        self.accept_num = full([b], 0, "int32")
        self.draft_token_num = full([b], k, "int32")
        self.top_k = full([b], 0, "int32")
        self.reasoning_status = full([b], 0, "int32")
        self.stop_flags = full([b], True, "bool")  # a free slot counts as stopped
        self.is_block_step = full([b], False, "bool")
        self.temperature = full([b], 1.0, "float32")
        self.top_p = full([b], 1.0, "float32")
        self.sample_temperature = full([b], 1.0, "float32")
        self.sample_top_p = full([b], 1.0, "float32")
        self.sample_top_k = full([b], 0, "int32")
        self.min_p = full([b], 0.0, "float32")
        self.draft_tokens = full([b, k + 1], -1, "int64")
        self.accept_tokens = full([b, k + 1], -1, "int64")
        self.ngram_anchor = full([b], -1, "int64")
        self.end_tokens = paddle.to_tensor(np.asarray(end_tokens, dtype=np.int64), place=self.place)
        self.cu_seqlens_q_output = full([b + 1], 0, "int32")
        self.batch_id_per_token_output = full([b * self.rows_per_slot], -1, "int32")
        self._scratch_packing = (full([b + 1], 0, "int32"), full([b * self.rows_per_slot], -1, "int32"))
        self.draft_tree_tokens = full([b, n], -1, "int64") if n else None
        self.draft_tree_parents = full([b, n], -1, "int32") if n else None
        self.draft_tree_depths = full([b, n], -1, "int32") if n else None
        self.accept_nodes = full([b, k + 1], -1, "int32") if n else None
        self.num_rows = 0  # packed output rows of the current step (host int)
        self._free = list(range(b))
        self.request_of_slot: list = [None] * b  # the caller's request id, None when free
        self.host = HostSlots(b)  # what the host knows of each slot without reading the device
        self.staging = HostCopies(self.place)  # host-to-device writes between steps
        self.vocab_size = vocab_size  # token ids a request names are checked against it when known
        self.logit_tables = LogitTables(b, self.place, table_widths)  # penalties, bias, bans (sampling_params.py)
        self.parameter_writes = SlotWrites(b)  # the request parameters' tensors: written when they change
        self._phases: tuple | None = None  # slot_phases within phases_fixed
        self._phases_fixed = False

    # -- requests ---------------------------------------------------------------------------

    @property
    def free_slots(self) -> list[int]:
        return list(self._free)

    def insert(
        self,
        prompt: Sequence[int],
        params: RequestParams,
        request_id: Hashable = None,
        output: Sequence[int] | None = None,
    ) -> int:
        """Puts a request into a free slot as a prefill; returns the slot.

        ``output``: the tokens the request already generated (a preempted request resuming). They
        go in after the prompt and ``step_idx`` starts at their count, so the prefill recomputes
        prompt + output and the request goes on at the positions (and so the random draws) where
        it stopped; ``prompt_lens`` stays the prompt's.

        Raises:
            RuntimeError: no free slot.
            ValueError: empty prompt, prompt + max_dec_len longer than max_model_len, or an output
                that already reached max_dec_len.
            InvalidRequestError: a sampling parameter out of range (``check_request``); nothing changes.
        """
        if not self._free:
            raise RuntimeError("SpecState.insert: no free slot (max_num_seqs reached)")
        prompt = np.asarray(prompt, dtype=np.int64).reshape(-1)
        done = np.zeros(0, np.int64) if output is None else np.asarray(output, dtype=np.int64).reshape(-1)
        p, s = len(prompt), len(done)
        if p == 0:
            raise ValueError("SpecState.insert: the prompt is empty")
        if p + params.max_dec_len > self.max_model_len:
            raise ValueError(
                f"SpecState.insert: prompt length {p} + max_dec_len {params.max_dec_len} exceeds "
                f"max_model_len {self.max_model_len}"
            )
        if s >= params.max_dec_len:
            raise ValueError(
                f"SpecState.insert: an output of {s} tokens leaves nothing to generate "
                f"(max_dec_len {params.max_dec_len})"
            )
        check_request(params, request_id, self.vocab_size, self.logit_tables.widths)
        slot = self._free.pop(0)
        row = np.full(self.max_model_len, -1, dtype=np.int64)
        row[:p] = prompt
        row[p : p + s] = done
        self.token_ids_all[slot] = self.staging(row)
        self.prompt_lens[slot] = p
        self.step_idx[slot] = s
        write = self.parameter_writes.write
        write(self.max_dec_len, slot, np.int64(params.max_dec_len))
        # through an int64 tensor: a Python int assigned to an element goes through float64 (53 bits)
        write(self.seed, slot, np.array(params.seed, dtype=np.int64), self.staging)
        write(self.temperature, slot, np.float32(params.temperature))
        write(self.top_p, slot, np.float32(params.top_p))
        write(self.top_k, slot, np.int32(params.top_k))
        greedy = params.temperature <= 0  # the sampler's parameters: a greedy request keeps only the argmax
        write(self.sample_temperature, slot, np.float32(1.0 if greedy else params.temperature))
        write(self.sample_top_p, slot, np.float32(0.0 if greedy else params.top_p))
        write(self.sample_top_k, slot, np.int32(1 if greedy else params.top_k))
        write(self.min_p, slot, np.float32(params.min_p))  # keeps the argmax: greedy requests need no other value
        self.seq_lens_encoder[slot] = p + s
        self.seq_lens_decoder[slot] = 0
        self.seq_lens_this_time[slot] = p + s
        self.accept_num[slot] = 0
        self.stop_flags[slot] = False
        self.is_block_step[slot] = False
        self.draft_tokens[slot] = -1
        self.accept_tokens[slot] = -1
        self.ngram_anchor[slot] = -1  # a new request copies from nowhere yet
        self.request_of_slot[slot] = request_id
        self.logit_tables.write(slot, params, self.staging, self.parameter_writes)
        self.host.insert(slot, prompt, done)
        return slot

    def finished_slots(self, status=None) -> list[int]:
        """Occupied slots whose request has stopped: as ``status`` (a ``StepStatus``) says, else read
        from the device."""
        stopped = status.stopped if status is not None else self.stop_flags.numpy()
        return [s for s in range(self.max_num_seqs) if s not in self._free and stopped[s]]

    def apply_status(self, status) -> None:
        """Takes a step's ``StepStatus`` into the host view: kept tokens, slot kinds, stop flags."""
        self.num_rows = status.num_rows
        self.host.apply(status)

    def output(self, slot: int) -> np.ndarray:
        """The tokens slot ``slot`` generated so far (int64; the end token included if emitted)."""
        p = int(self.prompt_lens[slot])
        s = int(self.step_idx[slot])
        return self.token_ids_all[slot, p : p + s].numpy().copy() if s > 0 else np.zeros(0, np.int64)

    def free(self, slot: int) -> None:
        """Makes ``slot`` inactive and available to ``insert``."""
        if slot in self._free:
            return
        self.seq_lens_encoder[slot] = 0
        self.seq_lens_decoder[slot] = 0
        self.seq_lens_this_time[slot] = 0
        self.accept_num[slot] = 0
        self.stop_flags[slot] = True
        self.draft_tokens[slot] = -1
        self.ngram_anchor[slot] = -1
        self.request_of_slot[slot] = None
        self.host.free(slot)
        self._free.append(slot)
        self._free.sort()

    def _tensor(self, array: np.ndarray) -> paddle.Tensor:
        return paddle.to_tensor(array, place=self.place)

    # -- output rows ----------------------------------------------------------------------

    def pack_rows(self) -> int:
        """Packs this step's output rows (``pack_rows_on_device``), reads their count on the host
        into ``num_rows`` and returns it: what an eager runner needs before its model forward."""
        self.num_rows = int(self.pack_rows_on_device().numpy().reshape(-1)[0])
        return self.num_rows

    @contextlib.contextmanager
    def phases_fixed(self) -> Iterator[None]:
        """Within: ``slot_phases`` computed at most once and shared (a step's proposing and packing change no
        slot's kind, only its rows)."""
        self._phases, self._phases_fixed = None, True
        try:
            yield
        finally:
            self._phases, self._phases_fixed = None, False

    def slot_phases(self) -> tuple[paddle.Tensor, paddle.Tensor]:
        """``(prefill, decode)`` bool [B] tensors: running (not stopped, not blocked) slots that
        prefill (``seq_lens_encoder > 0``) or decode (no encoder tokens, decoder tokens > 0)."""
        if self._phases is not None:
            return self._phases
        running = paddle.logical_not(paddle.logical_or(self.stop_flags, self.is_block_step))
        prefill = paddle.logical_and(running, self.seq_lens_encoder > 0)
        decode = paddle.logical_and(running, paddle.logical_and(self.seq_lens_encoder == 0, self.seq_lens_decoder > 0))
        if self._phases_fixed:
            self._phases = (prefill, decode)
        return prefill, decode

    def pack_rows_on_device(self) -> paddle.Tensor:
        """Writes this step's row packing in place, with tensor ops only (no host read: what a
        static or captured step runs): per slot one row for a prefill, ``seq_lens_this_time`` rows
        for a decode, none otherwise; ``cu_seqlens_q_output`` their prefix sums and
        ``batch_id_per_token_output`` each row's slot (-1 past them). Returns the row count as an
        int32 [1] tensor; ``num_rows`` is left to the caller (``pack_rows`` sets it)."""
        self.pack_slot_rows()
        return self.cu_seqlens_q_output[-1:]

    def pack_slot_rows(self, proposal=None) -> paddle.Tensor:
        """``pack_rows_on_device``'s packing in one op (``pack_rows``, docs/ops/pack_rows.md), after writing
        ``proposal``'s drafts (a ``Proposal``: a decode slot's drafts into ``draft_tokens[:, 1:]``, -1 past its
        length, and 1 + that length into ``seq_lens_this_time``; a prefill keeps its tokens, other slots get none)
        when one is given. Returns the step record, int64 ``[B, K + 2]``: rows, decode, drafts per slot
        (``fastspec.runtime.step_status``)."""
        return self._pack_rows(proposal, self.cu_seqlens_q_output, self.batch_id_per_token_output)

    def write_proposal(self, proposal) -> None:
        """``proposal``'s drafts and lengths written as ``pack_slot_rows`` writes them, the row packing left as it
        is (the op's packing goes to scratch tensors allocated with the state)."""
        self._pack_rows(proposal, *self._scratch_packing)

    def _pack_rows(self, proposal, cu: paddle.Tensor, row_slots: paddle.Tensor) -> paddle.Tensor:
        tokens = lens = None
        if proposal is not None:
            tokens, lens = proposal.tokens, proposal.lens
            tokens = tokens if tokens.is_contiguous() else tokens.contiguous()  # a column slice of the drafts
        return ops.pack_rows(
            self.stop_flags,
            self.is_block_step,
            self.seq_lens_encoder,
            self.seq_lens_decoder,
            self.draft_tokens,
            self.seq_lens_this_time,
            cu,
            row_slots,
            proposal_tokens=tokens,
            proposal_lens=lens,
        ).step_record

    @property
    def trees(self) -> bool:
        """The step drafts trees (``num_tree_nodes > 0``)."""
        return self.num_tree_nodes > 0

    def last_kept_rows(self) -> paddle.Tensor:
        """int64 [B]: per slot, the packed row whose prediction is its last kept token (the row of the last
        accepted node for a tree, ``cu + accept_num - 1`` for a chain); any row for a slot that kept none."""
        last = paddle.clip(self.accept_num.reshape([-1]) - 1, min=0)
        if self.trees:
            node = paddle.take_along_axis(self.accept_nodes, last.astype("int64").unsqueeze(-1), axis=1).reshape([-1])
            last = paddle.clip(node, min=0)
        return (self.cu_seqlens_q_output[:-1] + last).astype("int64")

    def row_batch_ids(self, num_rows: int | None = None) -> paddle.Tensor:
        """The first ``num_rows`` (default: the packed ones) entries of batch_id_per_token_output."""
        n = self.num_rows if num_rows is None else num_rows
        ids = self.batch_id_per_token_output
        return ids if n == ids.shape[0] else ids[:n]  # a chain step's model scores every row: no slice


def _place(place: paddle.Place | str | None):
    if place is None:
        return paddle.framework._current_expected_place()
    if isinstance(place, str):
        if place == "cpu":
            return paddle.CPUPlace()
        if place.startswith("gpu"):
            return paddle.CUDAPlace(int(place.split(":")[1]) if ":" in place else 0)
        raise ValueError(f"unknown place {place!r} (use 'cpu' or 'gpu[:N]')")
    return place

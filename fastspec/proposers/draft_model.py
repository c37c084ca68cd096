"""``DraftModelProposer``: MTP / EAGLE-style drafts from a small Paddle draft layer.

The draft layer is any callable ``draft_model(input_ids int64 [B], hidden float32 [B, H])
-> (logits [B, V], hidden_out [B, H])``. One *draft step* feeds every slot's last token and a
hidden state and takes the next draft token from the logits (argmax, or a seeded draw whose
probabilities are kept for REJECTION verification). ``num_model_steps`` steps write
``draft_tokens[:, 1..num_model_steps]``; with ``chain_hidden_states`` each step's output hidden
state is the next step's input, otherwise every step reads the target's hidden state.

Where the first inputs come from: after each step the runner hands the target's hidden states
of the packed rows to ``observe_target``; the proposer keeps, per slot, the hidden state of the
row that produced the last accepted token (MTP pairs the hidden state at position j with the
token at j + 1 to predict j + 2). The last accepted token is ``draft_tokens[b, 0]``.

Persistent buffers. The inputs of a draft step (``input_ids``, ``hidden``, ``position``,
``seed``) are tensors allocated once and only ever written in place, and a draft step
writes its results (the next input token, the chained hidden state, the next position) back
into those same tensors. A captured graph of one draft step (``static=True``: the step compiled
with ``paddle.jit.to_static`` and bound to the buffers once, at capture) therefore replays
correctly: each replay reads what the previous one wrote. Rebinding an attribute to a fresh
tensor instead (``self.hidden = hidden_out``) would leave a captured graph reading the stale
buffer: the known bug this layout rules out, and what the tests check.

Hybrid drafting: when ``num_speculative_tokens > num_model_steps`` the remaining columns are
filled by the ``ngram_append`` op from an n-gram match of the generated tokens extended by the
model's drafts (``docs/ops/ngram_append.md``; ``max_dec_len`` and ``token_budget`` respected).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import paddle

from fastspec import ops
from fastspec.proposers.base import Proposal, Proposer
from fastspec.reference.rng import STREAM_DRAFT
from fastspec.state import SpecState


def _zeros(shape: list[int], dtype: str, place) -> paddle.Tensor:
    return paddle.to_tensor(np.zeros(shape, dtype=dtype), place=place)


class _DraftStep:
    """One draft step over bound buffers: eager, or compiled once (static) and replayed.

    The buffers are bound when the step is built: replaying always reads and writes those very
    tensors, as a captured CUDA Graph would.
    """

    def __init__(self, fn: Callable, inputs: tuple, writes: tuple, static: bool) -> None:
        self._fn = paddle.jit.to_static(fn, full_graph=True) if static else fn
        self._inputs = inputs
        self._writes = writes  # per output: the buffer it is written into, or None

    def replay(self) -> tuple:
        with paddle.no_grad():  # inference: no backward program (the custom ops have none)
            outs = self._fn(*self._inputs)
        for out, buffer in zip(outs, self._writes):
            if buffer is not None:
                paddle.assign(out, output=buffer)
        return outs


class DraftModelProposer(Proposer):
    """Drafts from a Paddle draft layer fed with the target's hidden states.

    Args:
        draft_model: ``(input_ids [B] int64, hidden [B, H] float32) -> (logits [B, V], hidden_out [B, H])``.
        num_speculative_tokens: K, draft columns.
        num_model_steps: draft-model steps per proposal (default K); K - num_model_steps columns
            come from ngram_append.
        chain_hidden_states: feed each step's output hidden state to the next step (True), or the
            target's hidden state to every step (False).
        sample_drafts: draw drafts from softmax(logits) with the request's seed on the DRAFT
            random stream (their probabilities are kept for REJECTION); False: argmax (smallest
            id on ties).
        static: run the draft step as a compiled program bound to the persistent buffers.
        max_ngram_size, min_ngram_size, token_budget: the n-gram part of hybrid drafting.

    Raises:
        ValueError: num_model_steps outside [1, K], or bad n-gram settings.
    """

    def __init__(
        self,
        draft_model: Callable[[paddle.Tensor, paddle.Tensor], tuple[paddle.Tensor, paddle.Tensor]],
        num_speculative_tokens: int,
        *,
        num_model_steps: int | None = None,
        chain_hidden_states: bool = True,
        sample_drafts: bool = False,
        static: bool = False,
        max_ngram_size: int = 3,
        min_ngram_size: int = 1,
        token_budget: int = 0,
        anchored: bool = False,
    ) -> None:
        super().__init__(num_speculative_tokens)
        k = num_speculative_tokens
        steps = k if num_model_steps is None else num_model_steps
        if not isinstance(steps, int) or isinstance(steps, bool) or not 1 <= steps <= k:
            raise ValueError(f"DraftModelProposer: num_model_steps must be in [1, num_speculative_tokens = {k}], got {steps!r}")
        if steps < k and not 1 <= min_ngram_size <= max_ngram_size:
            raise ValueError(f"DraftModelProposer: need 1 <= min_ngram_size <= max_ngram_size, got {min_ngram_size}, {max_ngram_size}")
        self.draft_model = draft_model
        self.num_model_steps = steps
        self.chain_hidden_states = bool(chain_hidden_states)
        self.sample_drafts = bool(sample_drafts)
        self.static = bool(static)
        self.max_ngram_size, self.min_ngram_size, self.token_budget = max_ngram_size, min_ngram_size, token_budget
        self.anchored = bool(anchored)  # hybrid columns: anchored n-gram drafting (state.ngram_anchor)
        self.target_hidden: paddle.Tensor | None = None  # [B, H], written by observe_target
        self.buffers: dict[str, paddle.Tensor] = {}
        self.draft_probs: paddle.Tensor | None = None  # [B, K, V] q of each draft column
        self._step: _DraftStep | None = None

    @classmethod
    def from_config(cls, config, draft_model, **overrides: Any) -> DraftModelProposer:
        """From a SpeculativeConfig's mtp keys (num_model_steps, chain_hidden_states, ...)."""
        kwargs = dict(
            num_model_steps=getattr(config, "num_model_steps", 0) or None,
            chain_hidden_states=getattr(config, "chain_hidden_states", True),
            sample_drafts=getattr(config, "verify_strategy", "") == "rejection",
            max_ngram_size=config.max_ngram_size,
            min_ngram_size=config.min_ngram_size,
            token_budget=config.token_budget,
            anchored=getattr(config, "anchored", False),
        )
        kwargs.update(overrides)
        return cls(draft_model, config.num_speculative_tokens, **kwargs)

    # -- target hidden states ---------------------------------------------------------------

    def observe_target(self, state: SpecState, hidden: paddle.Tensor) -> None:
        """Keeps, per slot that committed tokens this step, the target's hidden state of the row
        that produced its last committed token. Called after the state update, with ``hidden``
        ``[T, H]`` in the packed row order of the step."""
        rows = int(hidden.shape[0])
        b = state.max_num_seqs
        if self.target_hidden is None or list(self.target_hidden.shape) != [b, int(hidden.shape[1])]:
            self.target_hidden = _zeros([b, int(hidden.shape[1])], "float32", state.place)
            self.buffers.clear()
            self._step = None
        if rows == 0:
            return
        num = state.accept_num.reshape([-1])
        last_row = paddle.clip(state.cu_seqlens_q_output[:-1] + num - 1, 0, rows - 1).astype("int64")
        gathered = paddle.gather(hidden.astype("float32"), last_row)
        kept = (num > 0).unsqueeze(-1)
        paddle.assign(paddle.where(kept, gathered, self.target_hidden), output=self.target_hidden)

    # -- buffers and the draft step ---------------------------------------------------------

    def _ensure_buffers(self, state: SpecState) -> None:
        if self.buffers:
            return
        b, h = state.max_num_seqs, int(self.target_hidden.shape[1])
        place = state.place
        self.buffers = {
            "input_ids": _zeros([b], "int64", place),
            "hidden": _zeros([b, h], "float32", place),
            "position": _zeros([b], "int64", place),
            "seed": _zeros([b], "int64", place),
            "rows": paddle.to_tensor(np.arange(b, dtype=np.int32), place=place),
            "cu": paddle.to_tensor(np.arange(b + 1, dtype=np.int32), place=place),
            "top_p": paddle.to_tensor(np.ones(b, np.float32), place=place),
            "top_k": _zeros([b], "int32", place),
        }

    def _step_fn(self, input_ids, hidden, position, seed, rows, cu, top_p, top_k):
        logits, hidden_out = self.draft_model(input_ids, hidden)
        probs = paddle.nn.functional.softmax(logits.astype("float32"), axis=-1)
        if self.sample_drafts:
            # the request's own seed on the DRAFT stream at the draft's position: independent
            # of the target's (TARGET) and verification's (ACCEPT / RESAMPLE) draws
            token = ops.sample_tokens(probs, top_p, top_k, seed, position, rows, cu, rand_stream=STREAM_DRAFT)
        else:
            token = paddle.argmax(probs, axis=-1)
            probs = paddle.nn.functional.one_hot(token, probs.shape[-1]).astype("float32")
        return token, probs, hidden_out.astype("float32"), position + 1

    def _draft_step(self) -> _DraftStep:
        if self._step is None:
            names = ("input_ids", "hidden", "position", "seed", "rows", "cu", "top_p", "top_k")
            buf = self.buffers
            writes = (buf["input_ids"], None, buf["hidden"] if self.chain_hidden_states else None, buf["position"])
            step_fn = self._step_fn

            # to_static converts plain functions with named arguments (a method needs an nn.Layer owner)
            def fn(input_ids, hidden, position, seed, rows, cu, top_p, top_k):
                return step_fn(input_ids, hidden, position, seed, rows, cu, top_p, top_k)

            self._step = _DraftStep(fn, tuple(buf[n] for n in names), writes, self.static)
        return self._step

    # -- proposing --------------------------------------------------------------------------

    def propose(self, state: SpecState) -> Proposal:
        k, steps = self.num_speculative_tokens, self.num_model_steps
        b = state.max_num_seqs
        if state.num_speculative_tokens != k:
            raise ValueError(
                f"DraftModelProposer: the state holds {state.num_speculative_tokens} draft columns, the proposer drafts {k}"
            )
        running = paddle.logical_not(paddle.logical_or(state.stop_flags, state.is_block_step))
        decode = paddle.logical_and(running, paddle.logical_and(state.seq_lens_encoder == 0, state.seq_lens_decoder > 0))
        if self.target_hidden is None:  # no target forward yet: nothing to draft from
            self.draft_probs = None
            empty = paddle.full([b, k], -1, dtype="int64")
            return Proposal(empty, paddle.zeros([b], dtype="int32"))
        self._ensure_buffers(state)
        buf = self.buffers
        paddle.assign(state.draft_tokens[:, 0], output=buf["input_ids"])
        paddle.assign(self.target_hidden, output=buf["hidden"])
        paddle.assign(state.step_idx, output=buf["position"])
        paddle.assign(state.seed, output=buf["seed"])

        step = self._draft_step()
        tokens, probs = [], []
        for _ in range(steps):
            token, q, _, _ = step.replay()
            tokens.append(token.reshape([-1, 1]).clone())
            probs.append(q.unsqueeze(1).clone())
        drafts = paddle.concat(tokens, axis=1)
        q_model = paddle.concat(probs, axis=1)  # [B, steps, V]

        # lens: leading valid drafts, bounded by draft_token_num and max_dec_len - step_idx - 1
        valid = paddle.cumprod((drafts >= 0).astype("int32"), dim=1).sum(axis=1).astype("int64")
        limit = paddle.minimum(state.draft_token_num.astype("int64"), state.max_dec_len - state.step_idx - 1)
        lens = paddle.clip(paddle.minimum(valid, limit), 0, steps).astype("int32")
        lens = paddle.where(decode, lens, paddle.zeros_like(lens))
        if steps < k:
            drafts = paddle.concat([drafts, paddle.full([b, k - steps], -1, dtype="int64")], axis=1)
        proposal = Proposal(drafts, lens)
        if steps == k:
            self._keep_probs(q_model, lens, state)
            return proposal

        # hybrid: model drafts first, then ngram_append fills the remaining columns in place
        self.check(proposal, b)
        self.write(proposal, state)
        ops.ngram_append(
            state.token_ids_all, state.prompt_lens, state.step_idx, state.draft_token_num, state.draft_tokens,
            state.seq_lens_this_time, state.seq_lens_encoder, state.seq_lens_decoder, state.max_dec_len,
            max_ngram_size=self.max_ngram_size, min_ngram_size=self.min_ngram_size, token_budget=self.token_budget,
            ngram_anchor=state.ngram_anchor if self.anchored else None,
        )
        final_lens = paddle.where(decode, paddle.clip(state.seq_lens_this_time - 1, min=0), paddle.zeros_like(lens))
        self._keep_probs(q_model, paddle.minimum(lens, final_lens), state)
        return Proposal(state.draft_tokens[:, 1:].clone(), final_lens)

    def _keep_probs(self, q_model: paddle.Tensor, model_lens: paddle.Tensor, state: SpecState) -> None:
        """draft_probs [B, K, V]: the model's q for its columns, one-hot of the draft for n-gram
        columns (a deterministic proposal), zeros past the drafts."""
        b, k = state.max_num_seqs, self.num_speculative_tokens
        vocab = int(q_model.shape[-1])
        if q_model.shape[1] < k:
            q_model = paddle.concat([q_model, paddle.zeros([b, k - q_model.shape[1], vocab], dtype="float32")], axis=1)
        cols = paddle.arange(k, dtype="int32").unsqueeze(0)
        from_model = (cols < model_lens.reshape([-1, 1])).unsqueeze(-1)
        drafts = state.draft_tokens[:, 1:]
        one_hot = paddle.nn.functional.one_hot(paddle.clip(drafts, 0, vocab - 1), vocab).astype("float32")
        one_hot = one_hot * ((drafts >= 0) & (drafts < vocab)).astype("float32").unsqueeze(-1)
        self.draft_probs = paddle.where(from_model, q_model, one_hot)

    def draft_probs_rows(self, state: SpecState, num_rows: int, vocab_size: int | None = None) -> paddle.Tensor | None:
        """The draft probabilities in packed row order ``[T, V]`` for REJECTION verification:
        row ``cu[b] + i`` holds q of draft ``i`` of slot ``b`` (zeros for other rows). Before the
        first drafts: zeros ``[T, vocab_size]`` (None without ``vocab_size``)."""
        if self.draft_probs is None:
            return None if vocab_size is None else _zeros([num_rows, vocab_size], "float32", state.place)
        b, k = state.max_num_seqs, self.num_speculative_tokens
        vocab = int(self.draft_probs.shape[-1])
        slot = state.row_batch_ids(num_rows).astype("int64")
        safe = paddle.clip(slot, 0, b - 1)
        index = paddle.arange(num_rows, dtype="int64") - paddle.gather(state.cu_seqlens_q_output.astype("int64"), safe)
        ok = (slot >= 0) & (slot < b) & (index >= 0) & (index < k)
        flat = self.draft_probs.reshape([b * k, vocab])
        rows = paddle.gather(flat, safe * k + paddle.clip(index, 0, k - 1))
        return rows * ok.astype("float32").unsqueeze(-1)

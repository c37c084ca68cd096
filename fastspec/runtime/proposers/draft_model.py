"""``DraftModelProposer``: MTP / EAGLE-style drafts from a small Paddle draft layer."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import paddle

from fastspec import ops
from fastspec.core.schema import PROBABILITY_STRATEGIES
from fastspec.core.streams import STREAM_DRAFT
from fastspec.runtime.proposers.base import Proposal, Proposer
from fastspec.runtime.proposers.ngram import draft_ngrams
from fastspec.runtime.proposers.tree import TreeProposal, empty_tree_proposal, head_top_k_tree
from fastspec.runtime.state import SpecState


class DraftShapeError(ValueError):
    """A hidden state or a draft head's output does not have the shape its buffers were sized for."""


def _zeros(shape: list[int], dtype: str, place) -> paddle.Tensor:
    return paddle.to_tensor(np.zeros(shape, dtype=dtype), place=place)


def _width(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
        raise ValueError(f"DraftModelProposer: {name} must be a positive int, got {value!r}")
    return int(value)


class DraftModelProposer(Proposer):
    """Drafts from a Paddle draft layer fed with the target's hidden states.

    The draft layer is any callable ``draft_model(input_ids int64 [B], hidden float32 [B, H_in or
    H]) -> (logits [B, V], hidden_out [B, H])``. One *draft step* feeds every slot's last token and a
    hidden state and takes the next draft token from the logits (argmax, or a seeded draw whose
    probabilities are kept for REJECTION verification). ``num_model_steps`` steps write
    ``draft_tokens[:, 1..num_model_steps]``.

    Widths. The first draft step reads the target's hidden state (width ``H_in``: ``H`` for MTP,
    the concatenated aux hidden states ``3H`` for EAGLE3); every step outputs width ``H``. With
    ``chain_hidden_states`` each later step reads the previous step's output (width ``H``),
    otherwise the target's hidden state again. The widths come from the head
    (``input_hidden_size``, ``hidden_size``, ``vocab_size`` attributes, or the constructor's
    arguments; an undeclared ``H_in`` is learnt from the first ``observe_target``, an undeclared
    ``H`` equals ``H_in``). They are fixed once the buffers exist: a hidden state or a head output
    of another width raises ``DraftShapeError`` and leaves the buffers as they were.

    Where the first inputs come from: after each step the runner hands the target's hidden states
    of the packed rows to ``observe_target``; the proposer keeps, per slot, the hidden state of the
    row that produced the last accepted token (MTP pairs the hidden state at position j with the
    token at j + 1 to predict j + 2). The last accepted token is ``draft_tokens[b, 0]``.

    Persistent buffers. ``buffers`` holds the target's hidden states, the inputs of a draft step
    (``input_ids``, ``hidden``, ``position``: where the last draft step left them) and
    ``draft_probs``: tensors allocated once and only ever written in place, each once per proposal.
    Within a proposal the draft steps pass their results to the next step as values (a static
    program must not read back a tensor it wrote in place). So a whole proposal can sit in a
    compiled or captured step (``fastspec.runtime.step.SpecStep``) and read the target's hidden states the
    last step left in ``target_hidden``; rebinding an attribute to a fresh tensor instead would leave
    a captured graph reading a stale buffer: the known bug this layout rules out, and what the tests
    check. ``static=True`` compiles the draft step itself with ``paddle.jit.to_static``.

    Hybrid drafting: when ``num_speculative_tokens > num_model_steps`` the remaining columns are
    filled by the ``ngram_append`` op from an n-gram match of the generated tokens extended by the
    model's drafts (``docs/ops/ngram_append.md``; ``max_dec_len`` and ``token_budget`` respected).

    Args:
        draft_model: ``(input_ids [B] int64, hidden [B, H_in or H] float32) -> (logits [B, V], hidden_out [B, H])``.
        num_speculative_tokens: K, draft columns.
        num_model_steps: draft-model steps per proposal (default K); K - num_model_steps columns
            come from ngram_append.
        chain_hidden_states: feed each step's output hidden state to the next step (True), or the
            target's hidden state to every step (False).
        sample_drafts: draw drafts from softmax(logits) with the request's seed on the DRAFT
            random stream (their probabilities are kept for REJECTION); False: argmax (smallest
            id on ties).
        keep_draft_probs: keep ``draft_probs [B, K, V]`` (what REJECTION verifies against);
            default: when drafts are sampled. Without it the proposer keeps no ``[B, K, V]`` tensor.
        static: compile the draft step with ``paddle.jit.to_static`` (one program per input width);
            ``fastspec.runtime.step.SpecStep`` compiles or captures the whole step instead.
        input_hidden_size, hidden_size, vocab_size: the head's widths (default: its attributes of
            those names; see the module docstring).
        max_ngram_size, min_ngram_size, token_budget, anchored: the n-gram part of hybrid drafting.

    Raises:
        ValueError: num_model_steps outside [1, K], bad n-gram settings or widths.
    """

    static_step_safe = True
    needs_target_hidden = True
    provides_draft_probs = True
    drafts_trees = True

    def __init__(
        self,
        draft_model: Callable[[paddle.Tensor, paddle.Tensor], tuple[paddle.Tensor, paddle.Tensor]],
        num_speculative_tokens: int,
        *,
        num_model_steps: int | None = None,
        chain_hidden_states: bool = True,
        sample_drafts: bool = False,
        keep_draft_probs: bool | None = None,
        static: bool = False,
        input_hidden_size: int | None = None,
        hidden_size: int | None = None,
        vocab_size: int | None = None,
        max_ngram_size: int = 3,
        min_ngram_size: int = 1,
        token_budget: int = 0,
        anchored: bool = False,
    ) -> None:
        super().__init__(num_speculative_tokens)
        k = num_speculative_tokens
        steps = k if num_model_steps is None else num_model_steps
        if not isinstance(steps, int) or isinstance(steps, bool) or not 1 <= steps <= k:
            raise ValueError(
                f"DraftModelProposer: num_model_steps must be in [1, num_speculative_tokens = {k}], got {steps!r}"
            )
        if steps < k and not 1 <= min_ngram_size <= max_ngram_size:
            raise ValueError(
                f"DraftModelProposer: need 1 <= min_ngram_size <= max_ngram_size, got {min_ngram_size}, {max_ngram_size}"
            )
        self.draft_model = draft_model
        self.num_model_steps = steps
        self.chain_hidden_states = bool(chain_hidden_states)
        self.sample_drafts = bool(sample_drafts)
        self.keep_draft_probs = self.sample_drafts if keep_draft_probs is None else bool(keep_draft_probs)
        self.static = bool(static)
        self.input_hidden_size = _width(
            input_hidden_size or getattr(draft_model, "input_hidden_size", None), "input_hidden_size"
        )
        self.hidden_size = _width(hidden_size or getattr(draft_model, "hidden_size", None), "hidden_size")
        self.vocab_size = _width(vocab_size or getattr(draft_model, "vocab_size", None), "vocab_size")
        self.max_ngram_size, self.min_ngram_size, self.token_budget = max_ngram_size, min_ngram_size, token_budget
        self.anchored = bool(anchored)  # hybrid columns: anchored n-gram drafting (state.ngram_anchor)
        self.buffers: dict[str, paddle.Tensor] = {}
        self._step: Callable | None = None

    @classmethod
    def from_config(cls, config, draft_model, **overrides: Any) -> DraftModelProposer:
        """From a SpeculativeConfig's mtp / eagle3 keys (num_model_steps, chain_hidden_states, ...)."""
        kwargs = dict(
            num_model_steps=getattr(config, "num_model_steps", 0) or None,
            chain_hidden_states=getattr(config, "chain_hidden_states", True),
            # a tree step drafts top-k trees (deterministic; verify_draft_tree judges them by their first children)
            sample_drafts=getattr(config, "verify_strategy", "") in PROBABILITY_STRATEGIES and not _trees(config),
            max_ngram_size=config.max_ngram_size,
            min_ngram_size=config.min_ngram_size,
            token_budget=config.token_budget,
            anchored=getattr(config, "anchored", False),
        )
        kwargs.update(overrides)
        return cls(draft_model, config.num_speculative_tokens, **kwargs)

    @property
    def target_hidden(self) -> paddle.Tensor | None:
        """``[B, H_in]``: per slot, the target's hidden state of its last committed token."""
        return self.buffers.get("target_hidden")

    @property
    def draft_probs(self) -> paddle.Tensor | None:
        """``[B, K, V]``: q of each draft column (with ``keep_draft_probs``, once a proposal ran)."""
        return self.buffers.get("draft_probs")

    @property
    def ready(self) -> bool:
        """True once the buffers exist (the widths are known and a state was seen)."""
        return bool(self.buffers)

    # -- target hidden states ---------------------------------------------------------------

    def observe_target(self, state: SpecState, hidden: paddle.Tensor) -> None:
        """Keeps, per slot that committed tokens this step, the target's hidden state of the row
        that produced its last committed token. Called after the state update, with ``hidden``
        ``[T, H_in]`` in the packed row order of the step (rows past the packed ones are ignored).

        Raises:
            DraftShapeError: ``hidden`` is not 2-D or its width is not the head's input width.
        """
        if len(hidden.shape) != 2:
            raise DraftShapeError(
                f"DraftModelProposer.observe_target: hidden must be [T, H_in], got shape {list(hidden.shape)}"
            )
        width = int(hidden.shape[1])
        if self.input_hidden_size is None:
            self.input_hidden_size = width
        elif width != self.input_hidden_size:
            raise DraftShapeError(
                f"DraftModelProposer.observe_target: hidden must be [T, {self.input_hidden_size}] (the draft head's "
                f"input width), got {list(hidden.shape)}"
            )
        self.prepare(state)
        rows = int(hidden.shape[0])
        if rows == 0:
            return
        target = self.buffers["target_hidden"]
        num = state.accept_num.reshape([-1])
        last_row = paddle.clip(state.last_kept_rows(), 0, rows - 1)
        gathered = paddle.gather(hidden.astype("float32"), last_row)
        kept = num > 0
        paddle.assign(paddle.where(kept.unsqueeze(-1), gathered, target), output=target)
        paddle.assign(paddle.logical_or(self.buffers["observed"], kept), output=self.buffers["observed"])

    # -- buffers and the draft steps --------------------------------------------------------

    def prepare(self, state: SpecState) -> None:
        """Allocates the persistent buffers for ``state`` once the input width is known.

        Raises:
            DraftShapeError: the buffers exist for a different number of slots.
        """
        b = state.max_num_seqs
        if self.buffers:
            if int(self.buffers["input_ids"].shape[0]) != b:
                raise DraftShapeError(
                    f"DraftModelProposer: its buffers hold {int(self.buffers['input_ids'].shape[0])} slots, the state has {b}"
                )
            return
        if self.input_hidden_size is None:
            return  # nothing known yet: the first observe_target sets the width
        h_in = self.input_hidden_size
        h = self.hidden_size or h_in
        self.hidden_size = h
        place = state.place
        self.buffers = {
            "target_hidden": _zeros([b, h_in], "float32", place),
            "observed": paddle.to_tensor(np.zeros(b, bool), place=place),  # the slot's target_hidden is set
            "input_ids": _zeros([b], "int64", place),
            "hidden": _zeros([b, h], "float32", place),
            "position": _zeros([b], "int64", place),
            "rows": paddle.to_tensor(np.arange(b, dtype=np.int32), place=place),
            "cu": paddle.to_tensor(np.arange(b + 1, dtype=np.int32), place=place),
            "top_p": paddle.to_tensor(np.ones(b, np.float32), place=place),
            "top_k": _zeros([b], "int32", place),
        }
        if self.keep_draft_probs and self.vocab_size is not None:
            self.buffers["draft_probs"] = _zeros([b, self.num_speculative_tokens, self.vocab_size], "float32", place)

    def _step_fn(self, input_ids, hidden, position, seed, rows, cu, top_p, top_k):
        logits, hidden_out = self.draft_model(input_ids, hidden)
        probs = paddle.nn.functional.softmax(logits.astype("float32"), axis=-1)
        if self.sample_drafts:
            # the request's own seed on the DRAFT stream at the draft's position: independent
            # of the target's (TARGET) and verification's (ACCEPT / RESAMPLE) draws
            token = ops.sample_tokens(probs, top_p, top_k, seed, position, rows, cu, rand_stream=STREAM_DRAFT)
        else:
            token = paddle.argmax(probs, axis=-1)
            if self.keep_draft_probs:
                probs = paddle.nn.functional.one_hot(token, probs.shape[-1]).astype("float32")
        return token, probs, hidden_out.astype("float32"), position + 1

    def _draft_step(self) -> Callable:
        """One draft step, ``(input_ids, hidden, position, seed) -> (token, q, hidden_out, position + 1)``,
        eager or compiled once per input width (``static``); its outputs are checked against the
        buffers' shapes."""
        if self._step is None:
            buf, step_fn = self.buffers, self._step_fn

            # to_static converts plain functions with named arguments (a method needs an nn.Layer owner)
            def fn(input_ids, hidden, position, seed, rows, cu, top_p, top_k):
                return step_fn(input_ids, hidden, position, seed, rows, cu, top_p, top_k)

            compiled = paddle.jit.to_static(fn, full_graph=True) if self.static else fn
            b = int(buf["input_ids"].shape[0])
            expected = {"hidden output": (2, [b, self.hidden_size])}
            if self.vocab_size is not None:
                expected["probabilities"] = (1, [b, self.vocab_size])

            def step(input_ids, hidden, position, seed):
                outs = compiled(input_ids, hidden, position, seed, buf["rows"], buf["cu"], buf["top_p"], buf["top_k"])
                for what, (index, shape) in expected.items():
                    if list(outs[index].shape) != shape:
                        raise DraftShapeError(
                            f"DraftModelProposer: the draft head's {what} must have shape {shape} "
                            f"(the width its buffers were sized for), got {list(outs[index].shape)}"
                        )
                return outs

            self._step = step
        return self._step

    # -- proposing --------------------------------------------------------------------------

    def propose(self, state: SpecState) -> Proposal:
        k, steps = self.num_speculative_tokens, self.num_model_steps
        b = state.max_num_seqs
        if state.num_speculative_tokens != k:
            raise ValueError(
                f"DraftModelProposer: the state holds {state.num_speculative_tokens} draft columns, the proposer drafts {k}"
            )
        self.prepare(state)
        if not self.ready:  # no width known and no target forward yet: nothing to draft from
            return Proposal(paddle.full([b, k], -1, dtype="int64"), paddle.zeros([b], dtype="int32"))
        buf = self.buffers
        decode = paddle.logical_and(state.slot_phases()[1], buf["observed"])  # no target hidden state yet: no drafts

        # the steps pass their results along as values; each buffer is written once, at the end
        # (in a static program, a tensor written in place twice may read back as after the first write)
        step = self._draft_step()
        input_ids, hidden, position = state.draft_tokens[:, 0], buf["target_hidden"], state.step_idx
        tokens, probs = [], []
        with paddle.no_grad():  # inference: no backward program (the custom ops have none)
            for _ in range(steps):
                input_ids, q, hidden_out, position = step(input_ids, hidden, position, state.seed)
                hidden = hidden_out if self.chain_hidden_states else buf["target_hidden"]
                tokens.append(input_ids.reshape([-1, 1]))
                probs.append(q)
        paddle.assign(input_ids, output=buf["input_ids"])
        paddle.assign(position, output=buf["position"])
        if self.chain_hidden_states:
            paddle.assign(hidden_out, output=buf["hidden"])
        drafts = paddle.concat(tokens, axis=1)

        # lens: leading valid drafts, bounded by draft_token_num and max_dec_len - step_idx - 1
        valid = paddle.cumprod((drafts >= 0).astype("int32"), dim=1).sum(axis=1).astype("int64")
        limit = paddle.minimum(state.draft_token_num.astype("int64"), state.max_dec_len - state.step_idx - 1)
        lens = paddle.clip(paddle.minimum(valid, limit), 0, steps).astype("int32")
        lens = paddle.where(decode, lens, paddle.zeros_like(lens))
        if steps < k:
            drafts = paddle.concat([drafts, paddle.full([b, k - steps], -1, dtype="int64")], axis=1)
        proposal = Proposal(drafts, lens)
        if steps < k:  # hybrid: model drafts first, then ngram_append fills the remaining columns in place
            self.check(proposal, b)
            self.write(proposal, state)
            draft_ngrams(ops.ngram_append, state, self)
            final_lens = paddle.where(decode, paddle.clip(state.seq_lens_this_time - 1, min=0), paddle.zeros_like(lens))
            lens = paddle.minimum(lens, final_lens)
            proposal = Proposal(state.draft_tokens[:, 1:].clone(), final_lens)
        if self.keep_draft_probs:
            self._keep_probs(probs, lens, proposal, state)
        return proposal

    def propose_tree(self, state: SpecState, top_k: int) -> TreeProposal:
        """EAGLE-2's top-k tree from the head (``head_top_k_tree``): ``top_k`` candidates per depth, depth K,
        for the decode slots whose target hidden state is known; none for the others."""
        b, k = state.max_num_seqs, self.num_speculative_tokens
        self.prepare(state)
        if not self.ready:  # no width known and no target forward yet: nothing to draft from
            return empty_tree_proposal(b, k * top_k)
        with paddle.no_grad():
            tree = head_top_k_tree(
                self.draft_model,
                state.draft_tokens[:, 0],
                self.buffers["target_hidden"],
                k,
                top_k,
                self.chain_hidden_states,
            )
        live = paddle.logical_and(state.slot_phases()[1], self.buffers["observed"]).unsqueeze(-1)
        tree.tokens = paddle.where(live, tree.tokens, paddle.full_like(tree.tokens, -1))
        return tree

    def _keep_probs(
        self, probs: list[paddle.Tensor], model_lens: paddle.Tensor, proposal: Proposal, state: SpecState
    ) -> None:
        """Writes draft_probs [B, K, V] in place: the model's q for its columns, one-hot of the
        draft for n-gram columns (a deterministic proposal), zeros past the drafts."""
        b, k = state.max_num_seqs, self.num_speculative_tokens
        vocab = int(probs[0].shape[-1])
        if "draft_probs" not in self.buffers:  # the vocabulary was not declared: learnt from the first logits
            self.vocab_size = vocab
            self.buffers["draft_probs"] = _zeros([b, k, vocab], "float32", state.place)
        zeros = paddle.zeros([b, vocab], dtype="float32")
        q = paddle.stack(probs + [zeros] * (k - len(probs)), axis=1)
        cols = paddle.arange(k, dtype="int32").unsqueeze(0)
        from_model = (cols < model_lens.reshape([-1, 1])).unsqueeze(-1)
        q = paddle.where(from_model, q, paddle.zeros_like(q))
        drafts = proposal.tokens
        live = (cols < proposal.lens.reshape([-1, 1])) & (drafts >= 0) & (drafts < vocab)
        one = live.unsqueeze(-1) & paddle.logical_not(from_model)
        q = paddle.put_along_axis(
            q, paddle.clip(drafts, 0, vocab - 1).unsqueeze(-1), one.astype("float32"), axis=-1, reduce="add"
        )
        paddle.assign(q, output=self.buffers["draft_probs"])

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


def _trees(config) -> bool:
    tree = getattr(config, "tree", None)
    return bool(tree is not None and tree.enabled)

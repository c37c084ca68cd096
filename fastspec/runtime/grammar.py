"""Structured output: grammar-constrained requests, with or without speculation (docs/structured_output.md).

Three classes, one job each:

- ``StructuredOutput``: a request's constraint (``RequestParams.structured_output``), checked and compiled
  to an llguidance grammar against the runner's tokenizer; a bad one raises ``StructuredOutputError``
  naming the request before anything changes.
- ``GrammarTokenizer``: the runner's Hugging Face tokenizer as llguidance sees it (built once).
- ``GrammarBatch``: the matchers of the constrained slots and, once a step, what speculation under a
  grammar needs: the matchers advance by the tokens the last step emitted, each constrained slot's drafts
  are cut at the first one its grammar forbids (and extended by the tokens the grammar forces), and the
  allowed-token bitmask of every constrained row is written for ``apply_token_bitmask``.

llguidance (``pip install fastspec[grammar]``) is imported only when a request has a constraint.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import paddle

from fastspec.runtime.grammar_trees import compact_tree, prune_tree, tree_masks

KINDS = ("json_schema", "json_object", "regex", "lark")
# JSON as json.dumps writes it (", " and ": ", no other whitespace): a model cannot wander off into
# whitespace, and a schema's "x-guidance" options still override it
JSON_LAYOUT = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}


class StructuredOutputError(ValueError):
    """A request's ``structured_output`` cannot be used; the message names the request."""


def _llguidance():
    try:
        import llguidance
        import llguidance.numpy  # noqa: F401  (the bitmask helpers)
    except ImportError as error:  # pragma: no cover (CI installs it)
        raise StructuredOutputError("structured output needs llguidance: pip install 'fastspec[grammar]'") from error
    return llguidance


class GrammarTokenizer:
    """The runner's tokenizer for llguidance: a ``tokenizers.Tokenizer`` or the path of a ``tokenizer.json``.

    ``end_token`` is the id llguidance allows once a grammar is complete (the runner's first end token),
    so a finished grammar ends its request.
    """

    def __init__(self, tokenizer: Any, end_token: int) -> None:
        llg = _llguidance()
        if isinstance(tokenizer, (str, Path)):
            try:
                text = Path(tokenizer).read_text()
            except OSError as error:
                raise StructuredOutputError(f"tokenizer: cannot read {tokenizer}: {error.strerror}") from error
        elif hasattr(tokenizer, "to_str"):
            text = tokenizer.to_str()
        else:
            raise StructuredOutputError(
                f"tokenizer must be a tokenizers.Tokenizer or the path of a tokenizer.json, got {type(tokenizer).__name__}"
            )
        self.end_token = int(end_token)
        self.llg = llg.LLTokenizer(text, eos_token=self.end_token)
        self.vocab_size = int(self.llg.vocab_size)
        self.words = (self.vocab_size + 31) // 32  # int32 words of one bitmask row


@dataclass(frozen=True)
class StructuredOutput:
    """One request's constraint, compiled: ``grammar`` is llguidance's grammar text."""

    kind: str
    grammar: str

    @classmethod
    def compile(cls, spec: Mapping[str, Any], tokenizer: GrammarTokenizer | None, request: Any) -> "StructuredOutput":
        """Checks ``spec`` (exactly one of ``json_schema``, ``json_object``, ``regex``, ``lark``) and compiles it.

        Raises:
            StructuredOutputError: naming ``request``: not a dict, no kind or two, a value of the wrong type,
                no tokenizer, or a grammar llguidance cannot compile.
        """
        who = f"request {request}"
        if not isinstance(spec, Mapping):
            raise StructuredOutputError(f"{who}: structured_output must be a dict, got {type(spec).__name__}")
        kinds = [k for k in spec if spec[k] is not None]
        unknown = [k for k in kinds if k not in KINDS]
        if unknown:
            raise StructuredOutputError(
                f"{who}: structured_output has unknown key(s) {unknown}; it takes one of {list(KINDS)}"
            )
        if len(kinds) != 1:
            raise StructuredOutputError(f"{who}: structured_output needs exactly one of {list(KINDS)}, got {kinds}")
        if tokenizer is None:
            raise StructuredOutputError(
                f"{who}: structured output needs the runner's tokenizer (generate(..., tokenizer=...))"
            )
        kind = kinds[0]
        value = spec[kind]
        llg = _llguidance()
        try:
            if kind == "json_schema":
                if not isinstance(value, (str, Mapping)):
                    raise TypeError(f"json_schema must be a dict or a JSON string, got {type(value).__name__}")
                grammar = llg.LLMatcher.grammar_from_json_schema(
                    value if isinstance(value, str) else json.dumps(value), defaults=JSON_LAYOUT
                )
            elif kind == "json_object":
                if value is not True:
                    raise TypeError(f"json_object must be True, got {value!r}")
                grammar = llg.LLMatcher.grammar_from_json_schema('{"type": "object"}', defaults=JSON_LAYOUT)
            else:
                if not isinstance(value, str):
                    raise TypeError(f"{kind} must be a str, got {type(value).__name__}")
                grammar = (llg.LLMatcher.grammar_from_regex if kind == "regex" else llg.LLMatcher.grammar_from_lark)(
                    value
                )
        except (TypeError, ValueError) as error:
            raise StructuredOutputError(f"{who}: structured_output {kind}: {error}") from error
        problem = llg.LLMatcher.validate_grammar(grammar, tokenizer.llg)
        if problem and not problem.startswith("WARNING"):
            raise StructuredOutputError(f"{who}: structured_output {kind} does not compile: {problem.strip()}")
        return cls(kind, grammar)


@dataclass
class StepGrammar:
    """What ``GrammarBatch.constrain`` did this step (tests and the demo read it)."""

    constrained_slots: int = 0
    cut_drafts: int = 0  # proposer drafts the grammar forbade (never reached the target)
    grammar_drafts: int = 0  # forced tokens that became drafts
    mask_rows: int = 0  # bitmask rows written
    changed: bool = False  # drafts changed: the rows must be packed again


class GrammarBatch:
    """The constrained slots of a batch: one llguidance matcher each, and the step's bitmasks.

    ``token_bitmask`` int32 ``[max_rows, W]`` and ``bitmask_index`` int32 ``[max_rows]`` are allocated once
    on the state's place and written in place each step (``apply_token_bitmask``'s inputs; rows of free
    requests and padding rows have index -1).

    Args:
        tokenizer: the runner's tokenizer (``GrammarTokenizer``).
        max_num_seqs, rows_per_slot: the state's sizes.
        place: the state's place.
        grammar_drafts: forced tokens become drafts (chains only).
        keep_first_forbidden: keep the first forbidden draft (strategies REJECTION and BLOCK: the rejection
            there draws from the residual of the target and draft distributions, so cutting it would change
            the output distribution; that draft is always rejected).
    """

    def __init__(
        self,
        tokenizer: GrammarTokenizer,
        max_num_seqs: int,
        rows_per_slot: int,
        place,
        grammar_drafts: bool = True,
        keep_first_forbidden: bool = False,
    ) -> None:
        llg = _llguidance()
        self.tokenizer = tokenizer
        self.grammar_drafts = grammar_drafts
        self.keep_first_forbidden = keep_first_forbidden
        self.max_rows = max_num_seqs * rows_per_slot
        self.matchers: dict[int, Any] = {}
        self.requests: dict[int, Any] = {}
        self._executor = llg.LLExecutor()
        self._background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fastspec-grammar")
        self._pending = None  # the step's mask job, its row count and place (masks_ready)
        self._host_mask = np.zeros((self.max_rows, tokenizer.words), np.int32)
        self._host_index = np.full(self.max_rows, -1, np.int32)
        self.token_bitmask = paddle.to_tensor(self._host_mask, place=place)
        self.bitmask_index = paddle.to_tensor(self._host_index, place=place)
        self.last = StepGrammar()

    # -- requests ---------------------------------------------------------------------------

    def insert(self, slot: int, constraint: StructuredOutput, request: Any, output: Sequence[int] = ()) -> None:
        """Starts ``slot``'s matcher (before the state takes the request; a failure leaves everything as it was);
        ``output``: what a resumed request already generated, which the matcher consumes."""
        llg = _llguidance()
        matcher = llg.LLMatcher(self.tokenizer.llg, constraint.grammar, log_level=0)
        if matcher.is_error():
            raise StructuredOutputError(
                f"request {request}: structured_output {constraint.kind}: {matcher.get_error()}"
            )
        self.requests[slot] = request
        try:
            self._advance(slot, matcher, np.asarray(output, np.int64))
        except RuntimeError:
            del self.requests[slot]
            raise
        self.matchers[slot] = matcher

    def free(self, slot: int) -> None:
        self.matchers.pop(slot, None)
        self.requests.pop(slot, None)

    # -- one step ---------------------------------------------------------------------------

    def constrain(self, state) -> StepGrammar:
        """After the proposer ran and the rows were packed, before the target: one host read of the state.
        The matchers are the background job's until ``masks_ready``.

        1. each constrained matcher consumes the tokens the previous step emitted (``accept_tokens``);
        2. a decoding slot's drafts are cut at the first one its grammar forbids (a tree: each forbidden node
           with its subtree); with ``grammar_drafts`` the tokens the grammar forces next become a chain's
           drafts when the proposer's do not already extend them;
        3. changed drafts and their counts are written back (``changed``: the caller packs the rows again);
        4. every constrained row's index is uploaded (-1 for every other row) and its bitmask computed in the
           background (llguidance's parallel batch calls over the slots' drafts; a tree's node by node) while
           the model runs; ``masks_ready`` waits for them and uploads them.
        """
        step = StepGrammar()
        self.masks_ready()  # a step whose masks were never used (its finish did not run) still ends its job
        self._host_index[:] = -1
        if not self.matchers:
            _upload(self._host_index, self.bitmask_index)
            self.last = step
            return step
        k = state.num_speculative_tokens
        width = state.num_tree_nodes if state.trees else k + 1
        host = self._read(state)
        drafts = host[:, : 3 * width] if state.trees else host[:, :width]
        at = drafts.shape[1]
        accept_tokens = host[:, at : at + k + 1]
        accept_num, cu_lo, cu_hi, enc, step_idx, max_dec = (host[:, at + k + 1 + i] for i in range(6))
        rows = cu_hi - cu_lo
        new_rows = rows.copy()
        work = []
        for slot, matcher in self.matchers.items():
            self._advance(slot, matcher, accept_tokens[slot, : max(0, int(accept_num[slot]))])
            if rows[slot] == 0:
                continue
            step.constrained_slots += 1
            if enc[slot] != 0 or rows[slot] == 1 and not self.grammar_drafts or k == 0:
                work.append((slot, matcher, []))  # a prefill, or nothing to judge: the committed state's mask
            elif state.trees:
                new_rows[slot] = self._prune(matcher, drafts[slot], int(rows[slot]), width, step)
                work.append((slot, matcher, None))
            else:
                proposed = drafts[slot, 1 : rows[slot]].tolist()
                kept, allowed, cut, forced = self._drafts(matcher, proposed, k, int(max_dec[slot] - step_idx[slot] - 1))
                step.cut_drafts += cut
                step.grammar_drafts += forced
                if kept != proposed:
                    drafts[slot, 1:] = -1
                    drafts[slot, 1 : 1 + len(kept)] = kept
                    new_rows[slot] = 1 + len(kept)
                work.append((slot, matcher, kept[:allowed]))
        step.changed = bool((new_rows != rows).any())
        if step.changed:
            self._write_drafts(state, drafts, rows, new_rows)
        step.mask_rows = self._masks(state, work, drafts, new_rows, width)
        _upload(self._host_index, self.bitmask_index)
        self.last = step
        return step

    def _prune(self, matcher, tree: np.ndarray, count: int, width: int, step: StepGrammar) -> int:
        """Cuts a tree's forbidden nodes in ``tree`` (its tokens, parents and depths rows, in place); returns its
        node count."""
        tokens, parents, depths = tree[:width], tree[width : 2 * width], tree[2 * width :]
        keep = prune_tree(matcher, tokens, parents, count)
        step.cut_drafts += count - len(keep)
        if len(keep) < count:
            tokens[:], parents[:], depths[:] = compact_tree(tokens, parents, depths, keep, width)
        return len(keep)

    def _masks(self, state, work, drafts: np.ndarray, rows: np.ndarray, width: int) -> int:
        """Every constrained row's index into ``_host_index``; its mask is computed in the background (while the
        runner runs its model) and uploaded by ``masks_ready``. Returns the count of mask rows."""
        cu = np.concatenate([[0], np.cumsum(rows)])
        base = 0
        trees, with_drafts, without = [], [], []  # llguidance's batch calls: the first takes no empty list
        for slot, matcher, valid in work:
            count = int(rows[slot]) if valid is None else 1 + len(valid)
            self._host_index[cu[slot] : cu[slot] + count] = np.arange(base, base + count, dtype=np.int32)
            if valid is None:  # a tree: node by node
                tree = drafts[slot]
                trees.append((matcher, tree[:width].copy(), tree[width : 2 * width].copy(), count, base))
            elif valid:
                with_drafts.append((matcher, base, valid))
            else:
                without.append((matcher, base))
            base += count
        if base:
            self._pending = (self._background.submit(self._fill, trees, with_drafts, without, base), base, state.place)
        return base

    def _fill(self, trees, with_drafts, without, base: int) -> None:
        """The masks into the host buffer (llguidance's batch calls drop the GIL and run on its own threads)."""
        masks = _llguidance().numpy
        for matcher, tokens, parents, count, at in trees:
            tree_masks(
                matcher,
                tokens,
                parents,
                count,
                lambda m, node, at=at: masks.fill_next_token_bitmask(m, self._host_mask, at + node),
            )
        if with_drafts:
            masks.fill_next_token_bitmask_par_with_draft_tokens(self._executor, with_drafts, self._host_mask[:base])
        if without:
            masks.fill_next_token_bitmask_par(self._executor, without, self._host_mask[:base])

    def masks_ready(self) -> None:
        """Waits for the step's masks and uploads them into ``token_bitmask``: before the sampler (``SpecStep.finish``)."""
        if self._pending is None:
            return
        job, base, place = self._pending
        self._pending = None
        job.result()  # an llguidance error surfaces here
        self.token_bitmask[:base] = paddle.to_tensor(self._host_mask[:base], place=place)

    def _read(self, state) -> np.ndarray:
        """The step's one host read, int64: the drafts (a chain's ``[B, K + 1]``; a tree's tokens, parents and
        depths, ``[B, 3 N]``), last step's emitted tokens ``[B, K + 1]`` and six counters per slot."""
        cu = state.cu_seqlens_q_output.astype("int64")
        columns = [state.accept_num, cu[:-1], cu[1:], state.seq_lens_encoder, state.step_idx, state.max_dec_len]
        columns = [c.reshape([-1, 1]).astype("int64") for c in columns]
        drafts = (
            [state.draft_tree_tokens, state.draft_tree_parents.astype("int64"), state.draft_tree_depths.astype("int64")]
            if state.trees
            else [state.draft_tokens]
        )
        return paddle.concat([*drafts, state.accept_tokens, *columns], axis=1).numpy()

    def _advance(self, slot: int, matcher, tokens: np.ndarray) -> None:
        if len(tokens) and not matcher.consume_tokens([int(t) for t in tokens]):
            raise RuntimeError(
                f"request {self.requests[slot]}: the grammar refused an emitted token "
                f"({matcher.get_error()}); the mask should have forbidden it"
            )

    def _drafts(self, matcher, proposed: list[int], k: int, room: int) -> tuple[list[int], int, int, int]:
        """(drafts kept, how many of them the grammar allows, proposer drafts cut, forced tokens added) for one
        decoding slot."""
        allowed = matcher.validate_tokens(proposed) if proposed else 0
        keep = allowed + 1 if self.keep_first_forbidden and allowed < len(proposed) else allowed
        kept = proposed[:keep]
        cut, forced, cap = len(proposed) - keep, 0, max(0, min(k, room))
        if self.grammar_drafts and not self.keep_first_forbidden and len(kept) < cap:
            ff = [int(t) for t in matcher.compute_ff_tokens()][:cap]
            if len(ff) > len(kept) and ff[: len(kept)] == kept:  # the grammar knows more than the proposer
                forced, kept = len(ff) - len(kept), ff
                allowed = matcher.validate_tokens(kept)
        return kept, allowed, cut, forced

    def _write_drafts(self, state, drafts: np.ndarray, rows: np.ndarray, new_rows: np.ndarray) -> None:
        """The changed drafts and draft counts back to the device (the caller packs the rows again)."""
        if state.trees:
            n = state.num_tree_nodes
            _upload(drafts[:, :n], state.draft_tree_tokens)
            _upload(drafts[:, n : 2 * n], state.draft_tree_parents)
            _upload(drafts[:, 2 * n :], state.draft_tree_depths)
        else:
            _upload(drafts, state.draft_tokens)
        changed = new_rows != rows
        lengths = paddle.to_tensor(np.where(changed, new_rows, 0).astype(np.int32), place=state.place)
        mask = paddle.to_tensor(changed, place=state.place)
        paddle.assign(
            paddle.where(mask, lengths, state.seq_lens_this_time.reshape([-1])).reshape(state.seq_lens_this_time.shape),
            output=state.seq_lens_this_time,
        )


def _upload(array: np.ndarray, tensor: paddle.Tensor) -> None:
    """A host array into a device tensor in place, in the tensor's dtype (one copy: ``paddle.assign`` of a
    numpy array inspects it element by element)."""
    source = paddle.to_tensor(np.ascontiguousarray(array), place=tensor.place)
    paddle.assign(source.astype(tensor.dtype).reshape(tensor.shape), output=tensor)


def make_grammar_batch(params: Sequence[Any], tokenizer: Any, state, config) -> tuple[GrammarBatch | None, list]:
    """The run's ``GrammarBatch`` and each request's compiled constraint (None for a free request), or
    ``(None, [None, ...])`` when no request has one: a run without constraints costs nothing extra.

    Every constraint is compiled here, before the first step: a bad one raises ``StructuredOutputError``
    naming its request, and nothing runs."""
    specs = [getattr(p, "structured_output", None) for p in params]
    if all(s is None for s in specs):
        return None, [None] * len(specs)
    end_token = int(state.end_tokens.numpy()[0])
    grammar_tokenizer = GrammarTokenizer(tokenizer, end_token) if tokenizer is not None else None
    compiled = [None if s is None else StructuredOutput.compile(s, grammar_tokenizer, i) for i, s in enumerate(specs)]
    return grammar_batch(grammar_tokenizer, state, config), compiled


def grammar_batch(grammar_tokenizer: GrammarTokenizer, state, config) -> GrammarBatch:
    """The ``GrammarBatch`` of a state and config (what ``make_grammar_batch`` and ``SpecEngine`` build)."""
    # a chain's REJECTION / BLOCK: the first forbidden draft stays (its rejection draws from the residual);
    # a tree's REJECTION judges one-hot drafts, whose residual a forbidden child leaves unchanged: cut it
    probability = config.speculative and config.verify_strategy in ("rejection", "block") and not state.trees
    return GrammarBatch(
        grammar_tokenizer,
        state.max_num_seqs,
        state.rows_per_slot,
        state.place,
        grammar_drafts=config.grammar_drafts and not probability and not state.trees,
        keep_first_forbidden=probability,
    )

"""``SuffixCache``: suffix decoding's host cache, with Arctic Inference's API (docs/suffix.md).

Public as ``fastspec.suffix``: ``from fastspec.suffix import SuffixCache`` stands in for
``arctic_inference.suffix_decoding.SuffixDecodingCache``: ``start_request``,
``add_active_response``, ``speculate`` (a ``SuffixDraft`` with ``token_ids``, ``parents``,
``probs``, ``score``, ``match_len``), ``stop_request``, ``evict_cached_response``,
``active_requests``, ``cached_requests``. The trees live in the native cache
(``custom_ops/suffix/``); the drafting rule is ``fastspec.reference.suffix``'s.

``draft(req_id, ...)`` drafts from the request's own prompt + response; a cache built with
``anchored_ngram`` also drafts by anchored n-gram there and returns one of the two drafts as
``DraftChoice`` picks (the suffix method's default, one native call per draft and per append).

Two batch calls serve a runner: ``speculate_batch`` drafts for many requests from their own
prompt + response, and ``add_batch`` folds in every request's accepted tokens, one native call
each; both take native keys (``key(req_id)``), so a runner keeps a key per slot and loops over
nothing in Python.

Every argument is checked before the cache is touched, so a refused call leaves it as it was. The
per-step calls (``speculate``, ``draft``, ``add_active_response``) hand their arguments straight to
the native cache, which checks them as it reads them: it refuses a token id or a rule value out of
range with a record of the rule (worded by ``fastspec.core.refusals``, as Python's own checks
here are) and leaves anything it does not take as it is to Python, which checks it, converts the
values and calls again:
``SuffixRequestError`` (a ``FastspecArgumentError``, so a ``ValueError``) for an unknown,
finished, already active or uncached request; ``FastspecArgumentError`` for a token id that is
negative or out of range; ``FastspecTypeError`` for token ids of a non-integer dtype or a
wrong rank.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Hashable, Sequence

import numpy as np

from fastspec.core.errors import FastspecArgumentError, FastspecTypeError
from fastspec.core.refusals import Refusal, error, from_record

INT32_MAX = 2**31 - 1
TREE_WIDTH_ALL = INT32_MAX  # a tree node offers every continuation (Arctic's use_tree_spec)


class SuffixRequestError(FastspecArgumentError):
    """A request id the call cannot take: unknown, finished, already active, or not cached."""


@dataclass
class SuffixDraft:
    """A draft: ``token_ids[i]``'s parent is ``token_ids[parents[i]]`` (-1: the context);
    ``probs`` the estimated probability of each token, ``score`` their sum, ``match_len`` the
    length of the context suffix the draft continues."""

    token_ids: list = field(default_factory=list)
    parents: list = field(default_factory=list)
    probs: list = field(default_factory=list)
    score: float = 0.0
    match_len: int = 0


def _core():
    from fastspec.arrays import module  # the native library loads on first use

    return module().SuffixCacheCore


class SuffixCache:
    """Per-request suffix trees over prompt + response and a global tree over cached responses.

    Args:
        max_tree_depth: longest substring the trees count (matches up to ``max_tree_depth - 1``
            tokens; the cost per appended token grows with it).
        max_cached_requests: responses kept in the global tree, oldest evicted first; -1 no
            limit, 0 no global tree.
        vocab_size: when given, token ids must be below it (otherwise below 2**31).
        anchored_ngram: when given, the ``max_ngram_size`` of an anchored n-gram drafter that
            ``draft`` weighs against the suffix draft (``min_ngram_size`` its shortest n-gram).
    """

    def __init__(
        self,
        max_tree_depth: int = 24,
        max_cached_requests: int = -1,
        vocab_size: int | None = None,
        anchored_ngram: int | None = None,
        min_ngram_size: int = 1,
    ) -> None:
        _check_int("max_tree_depth", max_tree_depth, 2, 4096)
        _check_int("max_cached_requests", max_cached_requests, -1, INT32_MAX)
        if vocab_size is not None:
            _check_int("vocab_size", vocab_size, 1, INT32_MAX + 1)
        if anchored_ngram is not None:
            _check_int("anchored_ngram", anchored_ngram, 1, INT32_MAX)
            _check_int("min_ngram_size", min_ngram_size, 1, anchored_ngram)
        self._max_tree_depth = max_tree_depth
        self._max_cached_requests = max_cached_requests
        self._vocab_size = vocab_size
        self._core = _core()(
            max_tree_depth,
            max_cached_requests,
            INT32_MAX if vocab_size is None else vocab_size - 1,
            anchored_ngram or 0,
            min_ngram_size,
        )
        self._keys: dict[Hashable, int] = {}  # active or cached request -> native key
        self._ids: dict[int, Hashable] = {}
        self._active: dict[Hashable, int] = {}  # active request -> native key, in start order
        self._next_key = 0

    # -- properties -----------------------------------------------------------------------

    @property
    def max_tree_depth(self) -> int:
        return self._max_tree_depth

    @property
    def max_cached_requests(self) -> int:
        return self._max_cached_requests

    @property
    def active_requests(self):
        """Requests started and not yet stopped."""
        return self._active.keys()

    @property
    def cached_requests(self) -> list:
        """Requests whose response is in the global tree, oldest first."""
        return [self._ids[k] for k in self._core.cached_requests()]

    def memory_bytes(self) -> int:
        """Bytes the native trees hold (nodes, child maps, token copies)."""
        return int(self._core.memory_bytes())

    def key(self, req_id: Hashable) -> int:
        """The native key of an active request (for ``speculate_batch`` / ``add_batch``)."""
        self._require_active("key", req_id)
        return self._keys[req_id]

    # -- the Arctic API ---------------------------------------------------------------------

    def start_request(self, req_id: Hashable, prompt_token_ids: Sequence[int]) -> None:
        """Starts a request over its prompt; a cached response of the same id is evicted first."""
        _hashable("start_request", req_id)
        if req_id in self._active:
            raise SuffixRequestError(f"SuffixCache.start_request: request {req_id!r} is already active")
        prompt = self._tokens("start_request", "prompt_token_ids", prompt_token_ids)
        key = self._keys.get(req_id)
        if key is None:
            key = self._next_key
        evicted = self._core.start_request(key, prompt)
        if key == self._next_key:
            self._next_key += 1
        self._keys[req_id], self._ids[key] = key, req_id
        self._active[req_id] = key
        for old in evicted:
            self._forget(self._ids[old])

    def add_active_response(self, req_id: Hashable, token_ids: int | Sequence[int]) -> None:
        """Appends generated token(s) to the request's tree and its cached response."""
        key = _lookup(self._active, req_id)
        if key is not None:
            taken = self._core.add_active_response(key, token_ids)
            if taken is True:
                return  # the usual call: checked natively as it was read
            if taken is not False:
                raise _refused("add_active_response", taken)
        self._require_active("add_active_response", req_id)
        tokens = self._tokens("add_active_response", "token_ids", token_ids)
        if self._core.add_active_response(self._keys[req_id], tokens) is not True:
            raise AssertionError("SuffixCache.add_active_response: the native cache declined checked tokens")

    def stop_request(self, req_id: Hashable) -> None:
        """Drops the request's own tree; its response stays cached until evicted."""
        self._require_active("stop_request", req_id)
        self._core.stop_request(self._keys[req_id])
        del self._active[req_id]
        self._forget(req_id)

    def evict_cached_response(self, req_id: Hashable) -> None:
        """Removes the request's response from the global tree."""
        _hashable("evict_cached_response", req_id)
        key = self._keys.get(req_id)
        if key is None or not self._core.cached(key):
            raise SuffixRequestError(f"SuffixCache.evict_cached_response: request {req_id!r} is not cached")
        self._core.evict_cached_response(key)
        self._forget(req_id)

    def speculate(
        self,
        req_id: Hashable,
        context: Sequence[int],
        max_spec_tokens: int | None = None,
        max_spec_factor: float = 1.0,
        max_spec_offset: float = 0.0,
        min_token_prob: float = 0.1,
        use_tree_spec: bool = False,
    ) -> SuffixDraft:
        """The most likely continuation of ``context`` (its last ``max_tree_depth`` tokens) from
        the request's tree and the global tree (the local draft unless the global scores higher).

        ``max_spec_tokens`` (default ``max_tree_depth``) caps the draft; a match of ``m`` tokens
        drafts at most ``int(m * max_spec_factor + max_spec_offset)`` tokens, each while its
        estimated probability stays at least ``min_token_prob``. ``use_tree_spec=True`` drafts a
        tree instead, as Arctic's does: best-first by probability over every continuation, at most
        that many nodes (``parents`` say its shape; docs/suffix.md "Trees").
        """
        key = _lookup(self._active, req_id)
        width = TREE_WIDTH_ALL if use_tree_spec is True else 1
        if key is not None and type(use_tree_spec) is bool:
            # the usual call: the native cache checks the context's tail and the rule as it reads them
            found = self._core.speculate(
                key, context, max_spec_tokens, max_spec_factor, max_spec_offset, min_token_prob, width
            )
            if type(found) is dict:
                raise _refused("speculate", found)
            if found is not None:
                return SuffixDraft(*found)
        self._require_active("speculate", req_id)
        if isinstance(context, (list, tuple, np.ndarray)) and np.ndim(context) == 1:
            context = context[-self._max_tree_depth :]  # only the tail is matched: check only the tail
        context = self._tokens("speculate", "context", context)[-self._max_tree_depth :]
        rule = self._checked_rule("speculate", max_spec_tokens, max_spec_factor, max_spec_offset, min_token_prob)
        if not isinstance(use_tree_spec, (bool, np.bool_)):
            raise FastspecTypeError(
                f"SuffixCache.speculate: use_tree_spec must be a bool, got {type(use_tree_spec).__name__}"
            )
        found = self._core.speculate(self._keys[req_id], context, *rule, TREE_WIDTH_ALL if use_tree_spec else 1)
        if found is None or type(found) is dict:
            raise AssertionError("SuffixCache.speculate: the native cache declined checked arguments")
        return SuffixDraft(*found)

    def draft(
        self,
        req_id: Hashable,
        max_spec_tokens: int | None = None,
        max_spec_factor: float = 1.0,
        max_spec_offset: float = 0.0,
        min_token_prob: float = 0.1,
    ) -> list[int]:
        """The active request's next draft (token ids) from its own prompt + response: the draft
        ``speculate`` gives for that context (and ``speculate_batch`` for its key), same rule.

        With ``anchored_ngram`` the cache also drafts by anchored n-gram over those tokens
        (``ngram_match``'s rules, one slot, ``draft_token_num`` = K = ``max_spec_tokens``) and
        returns one of the two as ``DraftChoice`` picks from each drafter's running average of
        accepted tokens (docs/suffix.md); the tokens the next ``add_active_response`` (or
        ``add_batch`` row) appends for the request are what the target kept, and score both.
        """
        key = _lookup(self._active, req_id)
        if key is not None:
            found = self._core.draft(key, max_spec_tokens, max_spec_factor, max_spec_offset, min_token_prob)
            if type(found) is dict:
                raise _refused("draft", found)
            if found is not None:
                return found  # the usual call: checked natively as it was read
        self._require_active("draft", req_id)
        rule = self._checked_rule("draft", max_spec_tokens, max_spec_factor, max_spec_offset, min_token_prob)
        found = self._core.draft(self._keys[req_id], *rule)
        if found is None or type(found) is dict:
            raise AssertionError("SuffixCache.draft: the native cache declined checked arguments")
        return found

    # -- batch calls ------------------------------------------------------------------------

    def speculate_batch(
        self,
        keys: np.ndarray,
        max_spec_tokens: np.ndarray,
        width: int,
        max_spec_factor: float = 1.0,
        max_spec_offset: float = 0.0,
        min_token_prob: float = 0.1,
        out: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    ):
        """Drafts for ``keys[i]`` (a native key, or -1 for none) from its own prompt + response,
        at most ``min(max_spec_tokens[i], width)`` tokens. Returns ``(tokens int64 [n, width]``
        (-1 after each draft), ``lens int32 [n]``, ``scores float32 [n])``, written into ``out``
        when given."""
        keys, limits = self._batch_keys("speculate_batch", keys, "max_spec_tokens", max_spec_tokens, width)
        factor, offset, min_prob = _rule("speculate_batch", max_spec_factor, max_spec_offset, min_token_prob)
        n = keys.shape[0]
        if out is None:
            out = (np.empty((n, width), np.int64), np.empty(n, np.int32), np.empty(n, np.float32))
        self._core.speculate_batch(keys, limits, width, factor, offset, min_prob, *out)
        return out

    def speculate_tree_batch(
        self,
        keys: np.ndarray,
        max_nodes: np.ndarray,
        width: int,
        tree_width: int = TREE_WIDTH_ALL,
        max_spec_depth: int | None = None,
        max_spec_factor: float = 1.0,
        max_spec_offset: float = 0.0,
        min_token_prob: float = 0.1,
    ):
        """Tree drafts for ``keys[i]`` (-1: none) from its own prompt + response (docs/suffix.md "Trees"): at most
        ``min(max_nodes[i], width)`` nodes, each offering its ``tree_width`` likeliest continuations; a match of
        ``m`` tokens reaches ``int(m * max_spec_factor + max_spec_offset)`` deep, at most ``max_spec_depth``
        (the runner's fixed node count, where Arctic's trees cap their nodes by the match). Returns ``(tokens int64 [n, width]`` (-1 after each tree), ``parents int32
        [n, width]`` (an earlier node, -1: a child of the context, and after the tree), ``probs float32 [n, width]``
        (each node's probability, 0 after the tree), ``lens int32 [n]``, ``scores float32 [n])``. Nodes come in
        the order taken: parents first, probabilities never growing, so ``build_draft_tree`` on them with
        ``probs`` as scores keeps them in this order."""
        keys, limits = self._batch_keys("speculate_tree_batch", keys, "max_nodes", max_nodes, width)
        _check_int("tree_width", tree_width, 1, TREE_WIDTH_ALL, op="speculate_tree_batch")
        depth = INT32_MAX if max_spec_depth is None else max_spec_depth
        _check_int("max_spec_depth", depth, 0, INT32_MAX, op="speculate_tree_batch")
        factor, offset, min_prob = _rule("speculate_tree_batch", max_spec_factor, max_spec_offset, min_token_prob)
        n = keys.shape[0]
        tokens, parents, probs = (
            np.empty((n, width), np.int64),
            np.empty((n, width), np.int32),
            np.empty((n, width), np.float32),
        )
        lens, scores = np.empty(n, np.int32), np.empty(n, np.float32)
        self._core.speculate_batch(
            keys,
            limits,
            int(depth),
            factor,
            offset,
            min_prob,
            tokens,
            lens,
            scores,
            int(tree_width),
            int(depth),
            True,
            parents,
            probs,
        )
        return tokens, parents, probs, lens, scores

    def add_batch(self, keys: np.ndarray, tokens: np.ndarray, counts: np.ndarray) -> None:
        """Appends ``tokens[i, :counts[i]]`` to request ``keys[i]`` (-1 or a count <= 0: skipped)."""
        keys = _array("add_batch", "keys", keys, np.int64, 1)
        tokens = _array("add_batch", "tokens", tokens, np.int64, 2)
        counts = _array("add_batch", "counts", counts, np.int32, 1)
        if counts.shape != keys.shape or tokens.shape[0] != keys.shape[0]:
            raise FastspecArgumentError(
                f"SuffixCache.add_batch: keys {keys.shape}, tokens {tokens.shape} and counts {counts.shape} disagree"
            )
        live = (keys >= 0) & (counts > 0)
        self._require_keys("add_batch", np.where(live, keys, -1))
        if (counts > tokens.shape[1]).any():
            raise FastspecArgumentError(f"SuffixCache.add_batch: counts exceed tokens' width {tokens.shape[1]}")
        used = live[:, None] & (np.arange(tokens.shape[1])[None, :] < counts[:, None])
        self._check_range("add_batch", "tokens", tokens[used])
        self._core.extend_batch(keys, tokens, counts)

    def request_tokens(self, req_id: Hashable) -> np.ndarray:
        """The active request's prompt and response so far (int32)."""
        self._require_active("request_tokens", req_id)
        return np.asarray(self._core.request_tokens(self._keys[req_id]), dtype=np.int32)

    # -- checks -----------------------------------------------------------------------------

    def _require_active(self, op: str, req_id: Hashable) -> None:
        _hashable(op, req_id)
        if req_id not in self._active:
            raise SuffixRequestError(f"SuffixCache.{op}: request {req_id!r} is not active (never started, or stopped)")

    def _checked_rule(self, op: str, max_spec_tokens, factor, offset, min_prob) -> tuple[int, float, float, float]:
        limit = self._max_tree_depth if max_spec_tokens is None else max_spec_tokens
        _check_int("max_spec_tokens", limit, 0, INT32_MAX, op=op)
        return (int(limit), *_rule(op, factor, offset, min_prob))

    def _batch_keys(self, op: str, keys, limit_name: str, limits, width: int) -> tuple[np.ndarray, np.ndarray]:
        """A batch call's ``keys`` (int64 [n], each live or -1) and its per-key ``limits`` (int32 [n]), checked
        with its ``width``."""
        keys = _array(op, "keys", keys, np.int64, 1)
        limits = _array(op, limit_name, limits, np.int32, 1)
        if limits.shape != keys.shape:
            raise FastspecArgumentError(f"SuffixCache.{op}: {limit_name} has shape {limits.shape}, keys {keys.shape}")
        _check_int("width", width, 0, 4096, op=op)
        self._require_keys(op, keys)
        return keys, limits

    def _require_keys(self, op: str, keys: np.ndarray) -> None:
        for key in np.unique(keys[keys >= 0]).tolist():  # distinct live keys: a few per batch
            if key not in self._ids or self._ids[key] not in self._active:
                raise SuffixRequestError(f"SuffixCache.{op}: key {key} is not an active request")

    def _tokens(self, op: str, name: str, value) -> list[int]:
        """Checked token ids as a list of ints (what the native single-request calls take)."""
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            value = [int(value)]
        if type(value) in (list, tuple) and value and all(type(t) is int for t in value):
            # the common case, a few Python ints per step: checked without numpy's per-call cost
            self._check_bounds(op, name, min(value), max(value))
            return value if type(value) is list else list(value)
        array = np.asarray(value)
        if array.size == 0:
            return []
        if array.dtype.kind not in "iu":
            raise FastspecTypeError(f"SuffixCache.{op}: {name} must hold integer token ids, got dtype {array.dtype}")
        if array.ndim != 1:
            raise FastspecTypeError(f"SuffixCache.{op}: {name} must be 1-D, got shape {array.shape}")
        self._check_range(op, name, array)
        return array.tolist()

    def _check_range(self, op: str, name: str, array: np.ndarray) -> None:
        if array.size:
            self._check_bounds(op, name, int(array.min()), int(array.max()))

    def _check_bounds(self, op: str, name: str, low_value: int, high_value: int) -> None:
        high = INT32_MAX if self._vocab_size is None else self._vocab_size - 1
        if low_value < 0 or high_value > high:
            bad = low_value if low_value < 0 else high_value
            raise error(f"SuffixCache.{op}", Refusal("token_id", name, bad, {"high": high}))

    def _forget(self, req_id: Hashable) -> None:
        """Drops the key of a request that is neither active nor cached any more."""
        key = self._keys.get(req_id)
        if key is not None and req_id not in self._active and not self._core.cached(key):
            del self._keys[req_id], self._ids[key]


def _lookup(table: dict, req_id):
    """``table.get(req_id)``, None for an unhashable id (the checked path then words the error)."""
    try:
        return table.get(req_id)
    except TypeError:
        return None


def _hashable(op: str, req_id) -> None:
    try:
        hash(req_id)
    except TypeError:
        raise FastspecTypeError(f"SuffixCache.{op}: req_id must be hashable, got {type(req_id).__name__}") from None


def _refused(op: str, record: dict) -> FastspecArgumentError:
    """The native cache's refusal of a call, worded."""
    return error(f"SuffixCache.{op}", from_record(record))


def _check_int(name: str, value, low: int, high: int, op: str = "__init__") -> None:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
        raise error(f"SuffixCache.{op}", Refusal("not_integer", name, type(value).__name__))
    if not low <= value <= high:
        raise error(f"SuffixCache.{op}", Refusal("int_range", name, value, {"lo": low, "hi": high}))


def _rule(op: str, factor, offset, min_prob) -> tuple[float, float, float]:
    for name, value in (("max_spec_factor", factor), ("max_spec_offset", offset), ("min_token_prob", min_prob)):
        if not isinstance(value, (int, float, np.floating)) or isinstance(value, bool) or value != value:
            raise error(f"SuffixCache.{op}", Refusal("number", name, value))
    if factor < 0:
        raise error(f"SuffixCache.{op}", Refusal("not_negative", "max_spec_factor", factor))
    return float(factor), float(offset), float(min_prob)


def _array(op: str, name: str, value, dtype, ndim: int) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        raise FastspecTypeError(f"SuffixCache.{op}: {name} must be a numpy array, got {type(value).__name__}")
    if value.dtype != dtype:
        raise FastspecTypeError(f"SuffixCache.{op}: {name} must be {np.dtype(dtype).name}, got {value.dtype}")
    if value.ndim != ndim:
        raise FastspecTypeError(f"SuffixCache.{op}: {name} must be {ndim}-D, got shape {value.shape}")
    return np.ascontiguousarray(value)

"""One small valid call of every op, written once: the base of the argument-error tests, the
cases of ``python -m fastspec check`` and the inputs of ``bench/bench_call_overhead.py``.

Each op's call has two slots (B = 2) and every tensor the op takes: the optional ones and those
of every strategy (a call of one strategy ignores the others'). :func:`example_call` makes a
call of any batch from it, slot by slot, from the shapes the schema declares: slot ``j`` copies
slot ``j % 2`` (or one drawn from ``seed``) of the written call with its rows (those
``cu_seqlens_q_output`` or ``batch_id_per_token_output`` give it); ``[B + 1]`` offsets are summed
again and tensors without a batch axis are kept. A new op adds its call here (a test checks that
every op of the schema has one).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from fastspec.core.schema import SCHEMAS, Dim, OpSchema

Arrays = dict[str, np.ndarray]
_I32, _I64, _F32 = np.int32, np.int64, np.float32
_CALLS: dict[str, Callable[[], tuple[Arrays, dict[str, Any]]]] = {}


def _example(*ops: str) -> Callable:
    def register(build: Callable[[], tuple[Arrays, dict[str, Any]]]) -> Callable:
        written = set(ops) & set(_CALLS)
        if written:  # a merge that kept two calls of one op: the later would win unseen
            raise ValueError(f"a second example call of {sorted(written)}")
        _CALLS.update(dict.fromkeys(ops, build))
        return build

    return register


@_example("ngram_match", "ngram_append")
def _ngram() -> tuple[Arrays, dict[str, Any]]:
    """Both slots: prompt 7 8 9 5, then 7 8 generated, up to 3 drafts; slot 1 brings an anchor (2)."""
    return {
        "token_ids_all": np.tile(np.array([7, 8, 9, 5, 7, 8, 0, 0], _I64), (2, 1)),
        "prompt_lens": np.array([4, 4], _I64),
        "step_idx": np.array([2, 2], _I64),
        "draft_token_num": np.array([3, 3], _I32),
        "draft_tokens": np.full((2, 4), -1, _I64),
        "seq_lens_this_time": np.array([1, 1], _I32),
        "seq_lens_encoder": np.zeros(2, _I32),
        "seq_lens_decoder": np.array([6, 6], _I32),
        "max_dec_len": np.array([100, 100], _I64),
        "ngram_anchor": np.array([-1, 2], _I64),
    }, {"max_ngram_size": 2}


def _probs() -> np.ndarray:
    return np.array([[0.1, 0.6, 0.3], [0.5, 0.25, 0.25]], _F32)


@_example("top_p_candidates")
def _top_p_candidates() -> tuple[Arrays, dict[str, Any]]:
    """One row a slot: row 0 with top-p 0.8; row 1 with top-p 0.9 and min_p 0.6."""
    return {
        "probs": _probs(),
        "top_p": np.array([0.8, 0.9], _F32),
        "batch_id_per_token_output": np.array([0, 1], _I32),
        "min_p": np.array([0.0, 0.6], _F32),
    }, {"max_candidate_len": 3}


@_example("sample_tokens")
def _sample_tokens() -> tuple[Arrays, dict[str, Any]]:
    """One row a slot, seeds 1 and 2: row 0 draws from what min_p 0.4 keeps, row 1 from its whole row."""
    return {
        "probs": _probs(),
        "top_p": np.ones(2, _F32),
        "top_k": np.zeros(2, _I32),
        "seed": np.array([1, 2], _I64),
        "step_idx": np.zeros(2, _I64),
        "batch_id_per_token_output": np.array([0, 1], _I32),
        "cu_seqlens_q_output": np.array([0, 1, 2], _I32),
        "min_p": np.array([0.4, 0.0], _F32),
    }, {}


@_example("top_k_top_p_probs")
def _top_k_top_p_probs() -> tuple[Arrays, dict[str, Any]]:
    """One row a slot: row 0 with top-p 0.8 and min_p 0.2; row 1 with top-k 1."""
    return {
        "probs": _probs(),
        "top_p": np.array([0.8, 1.0], _F32),
        "top_k": np.array([0, 1], _I32),
        "batch_id_per_token_output": np.array([0, 1], _I32),
        "min_p": np.array([0.2, 0.0], _F32),
    }, {}


def _verifying(rows: int) -> Arrays:
    """What the calls of both verifying ops share: two decoding slots far from their ends, ``rows`` output rows."""
    return {
        "accept_tokens": np.full((2, 3), -1, _I64),
        "accept_num": np.zeros(2, _I32),
        "seed": np.array([1, 2], _I64),
        "step_idx": np.array([3, 3], _I64),
        "stop_flags": np.zeros(2, bool),
        "is_block_step": np.zeros(2, bool),
        "seq_lens_encoder": np.zeros(2, _I32),
        "max_dec_len": np.array([100, 100], _I64),
        "end_tokens": np.array([2], _I64),
        "target_probs": np.full((rows, 10), 0.1, _F32),
        "draft_probs": np.full((rows, 10), 0.1, _F32),
    }


@_example("verify_draft_tokens")
def _verify_draft_tokens() -> tuple[Arrays, dict[str, Any]]:
    """Two decoding slots, each with drafts 5 6 after token 4; GREEDY against the targets 5 6 9 and 5 1 2."""
    return {
        **_verifying(6),
        "draft_tokens": np.array([[4, 5, 6], [4, 5, 6]], _I64),
        "target_tokens": np.array([5, 6, 9, 5, 1, 2], _I64),
        "candidate_ids": np.tile(np.array([[5, 6, -1]], _I64), (6, 1)),
        "candidate_scores": np.tile(np.array([[0.5, 0.3, 0]], _F32), (6, 1)),
        "candidate_lens": np.full(6, 2, _I32),
        "seq_lens_this_time": np.array([3, 3], _I32),
        "cu_seqlens_q_output": np.array([0, 3, 6], _I32),
        "reasoning_status": np.zeros(2, _I32),
    }, {"strategy": "greedy"}


@_example("update_model_status")
def _update_model_status() -> tuple[Arrays, dict[str, Any]]:
    """Slot 0 keeps 5 6, and 6 is its stop token; slot 1 keeps 5, its stop sequence 4 5 before its min_tokens."""
    return {
        "seq_lens_encoder": np.zeros(2, _I32),
        "seq_lens_decoder": np.array([3, 3], _I32),
        "seq_lens_this_time": np.array([2, 2], _I32),
        "step_idx": np.array([1, 1], _I64),
        "stop_flags": np.zeros(2, bool),
        "accept_tokens": np.array([[5, 6, -1], [5, -1, -1]], _I64),
        "accept_num": np.array([2, 1], _I32),
        "draft_tokens": np.array([[4, 6, -1], [4, 6, -1]], _I64),
        "token_ids_all": np.tile(np.array([1, 2, 4, 0, 0, 0], _I64), (2, 1)),
        "prompt_lens": np.array([2, 2], _I64),
        "is_block_step": np.zeros(2, bool),
        "max_dec_len": np.array([100, 100], _I64),
        "end_tokens": np.array([0], _I64),
        "stop_token_ids": np.array([[6, -1], [-1, -1]], _I64),
        "stop_sequences": np.array([[-1, -1, -1], [4, 5, -1]], _I64),
        "min_tokens": np.array([0, 3], _I64),
    }, {}


def _rates() -> np.ndarray:
    return np.array([0.3, 0.7, 0.8, 0.12, 0.6], _F32)


@_example("adaptive_plan")
def _adaptive_plan() -> tuple[Arrays, dict[str, Any]]:
    """Slot 0 decodes (estimates 0.9 and 0.5); slot 1 prefills 5 tokens; a probe every 4 steps."""
    return {
        "acceptance": np.array([[1, 0.9, 0.5], [0, 0.6, 0.6]], _F32),
        "found": np.ones(2, _F32),
        "step_cost": 1 + np.arange(8, dtype=_F32) / 4,
        "rates": _rates(),
        "seq_lens_encoder": np.array([0, 5], _I32),
        "stop_flags": np.zeros(2, bool),
        "is_block_step": np.zeros(2, bool),
        "probe_step": np.zeros(1, _I64),
        "draft_token_num": np.zeros(2, _I32),
        "worth": np.zeros((2, 3), _F32),
        "ranking": np.zeros((2, 3), _I32),
    }, {"probe_interval": 4}


@_example("adaptive_observe")
def _adaptive_observe() -> tuple[Arrays, dict[str, Any]]:
    """Slot 0 planned and offered 2 drafts (3 rows) and kept 2 tokens; slot 1 planned none and kept 1."""
    return {
        "acceptance": np.array([[1, 0.9, 0.5], [0, 0.6, 0.6]], _F32),
        "found": np.ones(2, _F32),
        "draft_token_num": np.array([2, 0], _I32),
        "cu_seqlens_q_output": np.array([0, 3, 4], _I32),
        "accept_num": np.array([2, 1], _I32),
        "rates": _rates(),
    }, {}


@_example("build_draft_tree")
def _build_draft_tree() -> tuple[Arrays, dict[str, Any]]:
    """Slot 0: candidates 5 and 6 after the root 4, 7 after 5; slot 1: 8 after the root, 9 after 8."""
    return {
        "candidate_tokens": np.array([[5, 6, 7], [8, 9, -1]], _I64),
        "candidate_parents": np.array([[-1, -1, 0], [-1, 0, -1]], _I32),
        "candidate_scores": np.array([[-0.1, -0.5, -0.3], [-0.2, -0.4, 0.0]], _F32),
        "draft_tree_tokens": np.full((2, 4), 4, _I64),
        "seq_lens_this_time": np.ones(2, _I32),
        "seq_lens_encoder": np.zeros(2, _I32),
        "seq_lens_decoder": np.array([9, 9], _I32),
    }, {"max_depth": 3}


@_example("verify_draft_tree")
def _verify_draft_tree() -> tuple[Arrays, dict[str, Any]]:
    """Slot 0's tree: root 4, children 5 and 6, 7 after 6; slot 1's is the chain 4 5 6; GREEDY."""
    return {
        **_verifying(7),
        "draft_tree_tokens": np.array([[4, 5, 6, 7], [4, 5, 6, 7]], _I64),
        "draft_tree_parents": np.array([[-1, 0, 0, 2], [-1, 0, 1, -1]], _I32),
        "target_tokens": np.array([6, 1, 7, 8, 5, 6, 1], _I64),
        "seq_lens_this_time": np.array([4, 3], _I32),
        "cu_seqlens_q_output": np.array([0, 4, 7], _I32),
    }, {"strategy": "greedy"}


@_example("process_logits")
def _process_logits() -> tuple[Arrays, dict[str, Any]]:
    """Slot 0: prompt 1 2, output 3, draft 5 (two rows); slot 1: prompt 3 4 (one row); every parameter on."""
    return {
        "logits": (np.arange(30, dtype=_F32).reshape(3, 10) - 15) / 4,
        "token_ids_all": np.array([[1, 2, 3, 0, 0, 0], [3, 4, 0, 0, 0, 0]], _I64),
        "prompt_lens": np.array([2, 2], _I64),
        "step_idx": np.array([1, 0], _I64),
        "draft_tokens": np.array([[3, 5], [4, -1]], _I64),
        "batch_id_per_token_output": np.array([0, 0, 1], _I32),
        "cu_seqlens_q_output": np.array([0, 2, 3], _I32),
        "repetition_penalty": np.array([2.0, 0.5], _F32),
        "presence_penalty": np.array([0.5, 0.0], _F32),
        "frequency_penalty": np.array([0.25, 0.0], _F32),
        "min_tokens": np.array([2, 0], _I64),
        "end_tokens": np.array([9], _I64),
        "stop_token_ids": np.array([[8], [-1]], _I64),
        "logit_bias_ids": np.array([[1, -1], [4, 4]], _I64),
        "logit_bias_values": np.array([[2.0, 0.0], [-1.0, 0.5]], _F32),
        "bad_words": np.array([[3, 7, -1, 6], [2, -1, -1, -1]], _I64),
        "draft_parents": np.array([[-1, 0], [-1, 0]], _I32),
    }, {}


@_example("model_inputs")
def _model_inputs() -> tuple[Arrays, dict[str, Any]]:
    """Slot 0 decodes drafts 5 6 after its tokens 1 2 3; slot 1 prefills its prompt 4 5 6 7."""
    return {
        "token_ids_all": np.array([[1, 2, 3, -1, -1, -1], [4, 5, 6, 7, -1, -1]], _I64),
        "prompt_lens": np.array([2, 4], _I64),
        "step_idx": np.array([1, 0], _I64),
        "seq_lens_encoder": np.array([0, 4], _I32),
        "draft_tokens": np.array([[3, 5, 6], [7, -1, -1]], _I64),
        "cu_seqlens_q_output": np.array([0, 3, 4], _I32),
        "batch_id_per_token_output": np.array([0, 0, 0, 1], _I32),
    }, {}


@_example("pack_rows")
def _pack_rows() -> tuple[Arrays, dict[str, Any]]:
    """Slot 0 decodes and its proposal offers 1 draft (4); slot 1 prefills 7 tokens."""
    return {
        "stop_flags": np.array([False, False]),
        "is_block_step": np.array([False, False]),
        "seq_lens_encoder": np.array([0, 7], _I32),
        "seq_lens_decoder": np.array([5, 0], _I32),
        "draft_tokens": np.array([[3, -1, -1], [9, -1, -1]], _I64),
        "seq_lens_this_time": np.array([1, 7], _I32),
        "cu_seqlens_q_output": np.array([0, 2, 3], _I32),
        "batch_id_per_token_output": np.array([0, 0, 1], _I32),
        "proposal_tokens": np.array([[4, 5], [6, 6]], _I64),
        "proposal_lens": np.array([1, 2], _I32),
    }, {}


@_example("step_status")
def _step_status() -> tuple[Arrays, dict[str, Any]]:
    """Slot 0 verified drafts 5 6, kept 5 and 9 and decodes on; slot 1 prefilled, kept 4 and stopped."""
    return {
        "step_record": np.array([[3, 1, 5, 6], [1, 0, -1, -1]], _I64),
        "accept_num": np.array([2, 1], _I32),
        "accept_tokens": np.array([[5, 9, -1], [4, -1, -1]], _I64),
        "stop_flags": np.array([False, True]),
        "is_block_step": np.array([False, False]),
        "seq_lens_encoder": np.array([0, 0], _I32),
        "seq_lens_decoder": np.array([11, 7], _I32),
    }, {}


@_example("temperature_softmax")
def _temperature_softmax() -> tuple[Arrays, dict[str, Any]]:
    """Row 0 at slot 0's temperature 0.7; rows 1 and 2 of the greedy slot 1 (0 reads as 1), one -inf logit."""
    return {
        "logits": np.array([[1.0, 2.0, 3.0], [0.5, -np.inf, 0.5], [2.0, 2.0, 1.0]], _F32),
        "temperature": np.array([0.7, 0.0], _F32),
        "batch_id_per_token_output": np.array([0, 1, 1], _I32),
    }, {}


@_example("emitted_logprobs")
def _emitted_logprobs() -> tuple[Arrays, dict[str, Any]]:
    """Slot 0 emitted 2 and 0 from its rows 0 and 1 at temperature 0.7; the greedy slot 1 (0 reads as 1) token 1."""
    return {
        "logits": np.array([[1.0, 2.0, 3.0], [0.5, -np.inf, 0.5], [2.0, 2.0, 1.0]], _F32),
        "temperature": np.array([0.7, 0.0], _F32),
        "cu_seqlens_q_output": np.array([0, 2, 3], _I32),
        "accept_tokens": np.array([[2, 0], [1, -1]], _I64),
        "accept_num": np.array([2, 1], _I32),
        "accept_nodes": np.array([[0, 1], [0, -1]], _I32),
    }, {"width": 2}


@_example("apply_token_bitmask")
def _apply_token_bitmask() -> tuple[Arrays, dict[str, Any]]:
    """Row 0 may take tokens 0 and 2 (bits 0b101 of bitmask row 0); row 1 is free (index -1)."""
    return {
        "logits": np.array([[1.0, 2.0, 3.0], [0.5, 0.5, 0.5]], _F32),
        "token_bitmask": np.array([[5]], _I32),
        "bitmask_index": np.array([0, -1], _I32),
    }, {}


def ops_with_examples() -> tuple[str, ...]:
    return tuple(_CALLS)


def example_about(op_name: str) -> str:
    """What the op's example call sets up, in a line (its builder's docstring)."""
    return _CALLS[op_name].__doc__ or ""


def example_call(op_name: str, batch: int = 2, seed: int | None = None) -> tuple[Arrays, dict[str, Any]]:
    """(arrays by name, attributes) of a valid call of ``op_name`` with ``batch`` slots: fresh arrays
    every call. ``seed``: each slot copies a slot of the written call drawn from it (None: in turn)."""
    arrays, attrs = _CALLS[op_name]()
    if batch == 2 and seed is None:
        return arrays, attrs
    picks = np.arange(batch) % 2 if seed is None else np.random.default_rng(seed).integers(0, 2, batch)
    return _slots(SCHEMAS[op_name], arrays, picks), attrs


def _rows_of_slots(arrays: Arrays) -> list[np.ndarray] | None:
    """The output rows of each slot of the written call (B = 2)."""
    if "cu_seqlens_q_output" in arrays:
        cu = arrays["cu_seqlens_q_output"]
        return [np.arange(cu[b], cu[b + 1]) for b in range(2)]
    if "batch_id_per_token_output" in arrays:
        return [np.flatnonzero(arrays["batch_id_per_token_output"] == b) for b in range(2)]
    return None


def _slots(op: OpSchema, arrays: Arrays, picks: np.ndarray) -> Arrays:
    """The written call's slots ``picks`` (and their rows) as a new call."""
    rows_of = _rows_of_slots(arrays)
    if rows_of is None and any(op.tensor(n).shapes[0][:1] == (Dim("T", 0),) for n in arrays):
        rows_of = [np.array([0]), np.array([1])]  # an op over rows alone (apply_token_bitmask): a row is a slot
    rows = np.concatenate([rows_of[p] for p in picks]) if rows_of is not None else None
    counts = [len(rows_of[p]) for p in picks] if rows_of is not None else None
    made = {}
    for name, value in arrays.items():
        first = next(alt for alt in op.tensor(name).shapes if len(alt) == value.ndim)[0]
        if first == Dim("B", 0):
            made[name] = value[picks]
        elif first == Dim("B", 1):  # offsets: each slot's extent, summed again
            made[name] = np.concatenate([[0], np.cumsum(np.diff(value)[picks])]).astype(value.dtype)
        elif first == Dim("T", 0) and name == "batch_id_per_token_output":  # rows name their slot
            made[name] = np.repeat(np.arange(len(picks)), counts).astype(value.dtype)
        elif first == Dim("T", 0):
            made[name] = value[rows]
        else:
            made[name] = value.copy()
    return made

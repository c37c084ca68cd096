"""The one declaration of every fastspec op.

Each :class:`OpSchema` below lists an op's tensors (name, dtypes, shape, in place or
new, optional, which strategies need it), its attributes (type, default, range)
and its documentation. Everything else is derived from it:

* the argument checks of both front ends (:mod:`fastspec.core.validate`);
* the Python wrappers of :mod:`fastspec.ops` (Paddle) and :mod:`fastspec.arrays`
  (pointer API): signatures, docstrings, named-tuple results;
* the Paddle registration of each op and its run-time shape guard, generated
  into C++ by ``python -m tools.codegen`` at build time;
* the argument-name lists tests and benchmarks use (``SCHEMAS[op].input_names``).

Shapes are written with symbols: ``B`` batch slots, ``K + 1`` draft columns,
``L`` max model length, ``T`` output rows, ``V`` vocabulary, ``E`` end tokens,
``Kc`` candidate columns, ``M`` bitmask rows, ``W`` bitmask words, ``S``, ``NB``, ``BW`` the widths of
process_logits' tables, ``SS`` that of the stop sequences (:data:`SIZES` lists them all).
``"[B] | [B, 1]"`` accepts either shape. A symbol is bound by the first tensor that has it and
checked against every later one.
This module imports nothing outside the standard library.
"""

from __future__ import annotations

import enum
import functools
import re
from dataclasses import dataclass, field
from typing import Any

PROBS = ("float32", "float16", "bfloat16")  # probability rows; computed in float32
PER_REQUEST = "[B] | [B, 1]"  # docs/ops/conventions.md: every per-request tensor may be [B] or [B, 1]
INT32_MAX = 2**31 - 1
CUDA_MAX_BATCH = 4096  # custom_ops/include/fastspec/common.h kMaxCudaBatch (a test checks they agree)
# The XPU kernels keep a slot's rows in local memory (custom_ops/xpu/xpu_types.h; a test checks they agree).
XPU_MAX_DRAFTS = 127  # K: a [K + 1] int64 row is 1 KB
XPU_MAX_END_TOKENS = 64  # E
XPU_MAX_STOP_COLS = 64  # S and SS of update_model_status's stop tables
_XPU_LIMITS = {"K": XPU_MAX_DRAFTS}
_XPU_LIMITS_E = {"K": XPU_MAX_DRAFTS, "E": XPU_MAX_END_TOKENS}
MAX_CANDIDATE_LEN = 1024  # custom_ops/include/fastspec/sampling.h kMaxCandidateLen (likewise)

# Every shape symbol, and the field of an op's params struct that holds its size (tools/codegen.py
# fills it from the first tensor every call passes that has the symbol). K is stored as the columns
# it gives, K + 1.
SIZES = {
    "B": "batch",
    "T": "rows",
    "V": "vocab",
    "L": "max_model_len",
    "K + 1": "draft_cols",
    "Kc": "candidate_cols",
    "E": "num_end_tokens",
    "R": "cost_len",
    "N": "tree_cols",
    "C": "candidate_count",
    "S": "stop_cols",
    "SS": "stop_sequence_cols",
    "NB": "bias_cols",
    "BW": "bad_words_cols",
    "M": "mask_rows",
    "W": "mask_words",
}

_DIM = re.compile(r"^([A-Za-z_]\w*)(?:\s*\+\s*(\d+))?$")


@dataclass(frozen=True)
class Dim:
    """One axis of a declared shape: ``symbol + offset`` (``K + 1``), or a literal size (``1``)."""

    symbol: str | None
    offset: int

    def __str__(self) -> str:
        if self.symbol is None:
            return str(self.offset)
        return f"{self.symbol} + {self.offset}" if self.offset else self.symbol


@functools.cache
def parse_shape(text: str) -> tuple[tuple[Dim, ...], ...]:
    """``"[B] | [B, 1]"`` -> the alternative shapes, each a tuple of :class:`Dim`."""
    shapes = []
    for alternative in text.split("|"):
        inner = alternative.strip()
        if not (inner.startswith("[") and inner.endswith("]")):
            raise ValueError(f"bad shape {text!r}")
        dims = []
        for token in filter(None, (t.strip() for t in inner[1:-1].split(","))):
            if token.isdigit():
                dims.append(Dim(None, int(token)))
                continue
            match = _DIM.match(token)
            if not match:
                raise ValueError(f"bad dimension {token!r} in {text!r}")
            dims.append(Dim(match.group(1), int(match.group(2) or 0)))
        shapes.append(tuple(dims))
    return tuple(shapes)


@dataclass(frozen=True)
class Tensor:
    """A tensor argument.

    ``inplace``: the op writes it and returns it. ``output``: a new tensor (the Paddle
    op allocates it; the pointer API takes it from the caller or allocates it).
    ``needed_by``: the strategies that read it (empty: every strategy); a tensor a
    strategy does not read may be passed or left out, and is ignored.
    """

    name: str
    dtypes: tuple[str, ...]
    shape: str
    doc: str
    inplace: bool = False
    output: bool = False
    optional: bool = False
    needed_by: tuple[str, ...] = ()

    @property
    def shapes(self) -> tuple[tuple[Dim, ...], ...]:
        return parse_shape(self.shape)

    def used_by(self, strategy: str | None) -> bool:
        return not self.needed_by or strategy in self.needed_by

    def required_by(self, strategy: str | None) -> bool:
        """Must be given (not None) for a call with ``strategy``."""
        if self.needed_by:
            return strategy in self.needed_by
        return not self.optional


@dataclass(frozen=True)
class Attr:
    """An attribute. ``kind``: "int" (64-bit in the pointer API; ``bits`` gives the Paddle
    attribute's width), "bool" or "str". ``lo`` / ``hi``: inclusive bounds, an int or an
    expression over the shape symbols and earlier attributes, written so that it reads the
    same in Python and in C++ (``"min(V, 1024)"``). ``choices``: the allowed values."""

    name: str
    kind: str
    doc: str
    default: Any = None
    required: bool = False
    lo: int | str | None = None
    hi: int | str | None = None
    choices: tuple[Any, ...] = ()
    bits: int = 64


@dataclass(frozen=True)
class OpSchema:
    name: str
    summary: str
    tensors: tuple[Tensor, ...]
    attrs: tuple[Attr, ...]
    result: str = ""  # name of the named tuple the op returns (none when it returns one tensor)
    details: str = ""
    symbol_ranges: dict[str, tuple[int | None, int | None]] = field(default_factory=dict)
    device_limits: dict[str, dict[str, int]] = field(default_factory=dict)
    strategy_attr: str | None = None  # the attribute whose value picks the tensors (needed_by)
    header: str = ""  # custom_ops/include/fastspec/<header>: its params struct and launchers (default <name>.h)

    @property
    def params_header(self) -> str:
        return self.header or f"{self.name}.h"

    @property
    def inputs(self) -> tuple[Tensor, ...]:
        return tuple(t for t in self.tensors if not t.output)

    @property
    def outputs(self) -> tuple[Tensor, ...]:
        return tuple(t for t in self.tensors if t.output)

    @property
    def input_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.inputs)

    @property
    def output_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.outputs)

    @property
    def attr_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attrs)

    @property
    def returns(self) -> tuple[str, ...]:
        """What the op returns, in order: its in-place tensors (but optional ones, which the caller
        holds), then its new ones."""
        return tuple(t.name for t in self.inputs if t.inplace and not t.optional) + self.output_names

    def tensor(self, name: str) -> Tensor:
        return next(t for t in self.tensors if t.name == name)

    def attr(self, name: str) -> Attr:
        return next(a for a in self.attrs if a.name == name)


def _per_request(name: str, dtype: str, doc: str, **kw: Any) -> Tensor:
    return Tensor(name, (dtype,), PER_REQUEST, doc, **kw)


# Per-request tensors several ops declare alike: one declaration each.
_PROMPT_LENS = _per_request("prompt_lens", "int64", "prompt length of each request")
_SEQ_LENS_ENCODER = _per_request("seq_lens_encoder", "int32", "prefill tokens this step (> 0: a prefill slot)")
_SEQ_LENS_DECODER = _per_request(
    "seq_lens_decoder", "int32", "tokens in the cache (> 0 with no prefill: a decode slot)"
)


# --- the ops -----------------------------------------------------------------------

_NGRAM_TENSORS = (
    Tensor("token_ids_all", ("int64",), "[B, L]", "the prompt in ``[0, prompt_lens[b])``, then the generated tokens"),
    _PROMPT_LENS,
    _per_request("step_idx", "int64", "generated tokens so far; the query is the newest ``n`` of them"),
    _per_request("draft_token_num", "int32", "drafts each request may take"),
    Tensor(
        "draft_tokens",
        ("int64",),
        "[B, K + 1]",
        "column 0 (the last committed token) is kept, columns ``1..K`` get the drafts then -1",
        inplace=True,
    ),
    _per_request(
        "seq_lens_this_time",
        "int32",
        "``1 + drafts`` for a decode slot, 0 for an inactive one, unchanged for a prefill one",
        inplace=True,
    ),
    _SEQ_LENS_ENCODER,
    _SEQ_LENS_DECODER,
    _per_request("max_dec_len", "int64", "a request never drafts past ``max_dec_len - 1`` generated tokens"),
    Tensor(
        "ngram_anchor",
        ("int64",),
        "[B]",
        "anchored drafting (docs/ops/ngram_match.md): the row position the slot's previous drafts were "
        "copied from, -1 for none; updated in place. Left out: every step searches afresh",
        inplace=True,
        optional=True,
    ),
)

_NGRAM_ATTRS = (
    Attr("max_ngram_size", "int", "longest n-gram tried", required=True, lo=1, hi=INT32_MAX, bits=32),
    Attr("min_ngram_size", "int", "shortest n-gram tried", default=1, lo=1, hi="max_ngram_size", bits=32),
    Attr(
        "token_budget",
        "int",
        "tokens the whole step may take, base tokens of every running slot included; <= 0: unlimited",
        default=0,
        lo=-INT32_MAX - 1,
        hi=INT32_MAX,
        bits=32,
    ),
)


def _ngram_op(name: str, summary: str, details: str) -> OpSchema:
    """ngram_match and ngram_append take the same tensors and attributes and share their rules."""
    return OpSchema(
        name=name,
        summary=summary,
        details=details,
        tensors=_NGRAM_TENSORS,
        attrs=_NGRAM_ATTRS,
        result="NgramDrafts",
        symbol_ranges={"L": (0, INT32_MAX), "K": (0, None)},
        device_limits={"cuda": {"B": CUDA_MAX_BATCH}, "xpu": _XPU_LIMITS},
    )


NGRAM_MATCH = _ngram_op(
    "ngram_match",
    summary="Proposes drafts by looking the newest generated n-gram up in the prompt, then in the output.",
    details=(
        "For ``n`` from ``max_ngram_size`` down to ``min_ngram_size``: the leftmost match of the newest\n"
        "``n`` generated tokens in the prompt, else in the generated tokens, gives the tokens that\n"
        "follow it as drafts (at most ``min(draft_token_num, K, max_dec_len - step_idx - 1)``).\n"
        "Prefill slots are untouched, inactive slots cleared. See docs/ops/ngram_match.md."
    ),
)

NGRAM_APPEND = _ngram_op(
    "ngram_append",
    summary="Hybrid drafting: keeps a draft model's drafts and fills the remaining columns from an n-gram match.",
    details=(
        "For a decode slot the model's drafts are ``draft_tokens[b, 1..m]``, ``m = seq_lens_this_time[b] - 1``\n"
        "(clamped to ``[0, K]``, then cut to ``md = min(draft_token_num, K, max_dec_len - step_idx - 1)``);\n"
        "they are kept and read as continuing the generated tokens, and up to ``md - m`` more come from\n"
        "the n-gram match (ngram_match's rules) of that extended sequence; the token budget trims from\n"
        "the end. See docs/ops/ngram_append.md."
    ),
)

_ROWS = "[T]"
# Tensors several ops declare alike: one declaration each.
_PROBS = Tensor("probs", PROBS, "[T, V]", "probabilities of each output row (computed in float32)")
_BATCH_ID = Tensor(
    "batch_id_per_token_output",
    ("int32",),
    _ROWS,
    "the request of each row; a value outside ``[0, B)`` marks a padding row",
)
_CU_SEQLENS = Tensor("cu_seqlens_q_output", ("int32",), "[B + 1]", "request ``b`` owns rows ``[cu[b], cu[b + 1])``")
_CU_SEQLENS_INPLACE = Tensor(
    "cu_seqlens_q_output",
    ("int32",),
    "[B + 1]",
    "written: request ``b`` owns rows ``[cu[b], cu[b + 1])``",
    inplace=True,
)
_TOP_P = _per_request("top_p", "float32", "top-p of each request, whatever the dtype of ``probs``")
_TOP_K = _per_request("top_k", "int32", "top-k of each request (``<= 0`` or ``>= V``: no top-k)")
_MIN_P = _per_request(
    "min_p",
    "float32",
    "min-p of each request: keep the tokens whose probability is at least ``min_p`` times the row's largest "
    "(``<= 0`` or NaN: no cut). Left out: no min-p",
    optional=True,
)

TOP_P_CANDIDATES = OpSchema(
    name="top_p_candidates",
    header="sampling.h",
    summary="The top-p candidates of every output row, in probability order.",
    details=(
        "The first ``max_candidate_len`` valid tokens (finite, > 0, kept by ``min_p``) by probability\n"
        "descending, then id ascending, cut to the top-p prefix (threshold from the mass of every kept\n"
        "entry of the row, exact integer arithmetic); slots past the length hold id -1 and score 0;\n"
        "padding rows and rows without a valid entry have length 0. See docs/ops/sampling.md."
    ),
    tensors=(
        _PROBS,
        _TOP_P,
        _BATCH_ID,
        _MIN_P,
        Tensor("candidate_ids", ("int64",), "[T, max_candidate_len]", "candidate token ids, then -1", output=True),
        Tensor("candidate_scores", ("float32",), "[T, max_candidate_len]", "their probabilities, then 0", output=True),
        Tensor("candidate_lens", ("int32",), _ROWS, "the length of each row's top-p prefix", output=True),
    ),
    attrs=(
        Attr(
            "max_candidate_len",
            "int",
            "candidates per row, K'",
            required=True,
            lo=1,
            hi=f"min(V, {MAX_CANDIDATE_LEN})",
            bits=32,
        ),
    ),
    result="TopPCandidates",
    symbol_ranges={"V": (1, INT32_MAX)},
)

STREAM_TARGET, STREAM_DRAFT = 1, 5  # fastspec.reference.rng (a test checks they agree)

SAMPLE_TOKENS = OpSchema(
    name="sample_tokens",
    header="sampling.h",
    summary="One seeded token per output row from the top-k ∩ top-p renormalised distribution.",
    details=(
        "Row ``t`` of request ``b`` is drawn with ``rand64(seed[b], step_idx[b] + t - cu_seqlens_q_output[b],\n"
        "rand_stream)`` from the top-p prefix of the first ``top_k`` valid tokens that ``min_p`` keeps,\n"
        "re-ordered by ascending id; -1 for padding rows and rows without a valid entry. Batch-invariant\n"
        "and reproducible.\n"
        "See docs/ops/sampling.md."
    ),
    tensors=(
        _PROBS,
        _TOP_P,
        _TOP_K,
        _per_request("seed", "int64", "the request's seed"),
        _per_request("step_idx", "int64", "generated tokens so far (the position of row 0)"),
        _BATCH_ID,
        _CU_SEQLENS,
        _MIN_P,
        Tensor("tokens", ("int64",), _ROWS, "the sampled token of each row, -1 for padding", output=True),
    ),
    attrs=(
        Attr(
            "rand_stream",
            "int",
            "the random stream: ``STREAM_TARGET`` (1, the target's samples) or ``STREAM_DRAFT`` (5, a draft "
            "model's samples: the request's own seed, draws independent of the target's)",
            default=STREAM_TARGET,
            choices=(STREAM_TARGET, STREAM_DRAFT),
            bits=32,
        ),
    ),
    symbol_ranges={"V": (1, INT32_MAX)},
)

TOP_K_TOP_P_PROBS = OpSchema(
    name="top_k_top_p_probs",
    header="sampling.h",
    summary="Each row's distribution exactly as sample_tokens samples it: its top-k ∩ top-p set, renormalised.",
    details=(
        "Row ``t`` of request ``b`` keeps the set ``S`` sample_tokens draws from (the top-p prefix of the first\n"
        "``top_k`` valid tokens that ``min_p`` keeps, exact integer masses); a member of mass ``m`` gets\n"
        "``float(double(m) / double(M))``, ``M`` = the mass of ``S`` (1 when ``M`` is 0: ``S`` is one token), every\n"
        "other entry 0. Padding rows and rows without a valid entry are all zeros. REJECTION's target\n"
        "distribution. See docs/ops/sampling.md."
    ),
    tensors=(
        _PROBS,
        _TOP_P,
        _TOP_K,
        _BATCH_ID,
        _MIN_P,
        Tensor(
            "target_probs",
            ("float32",),
            "[T, V]",
            "the renormalised distribution of each row, 0 outside its set",
            output=True,
        ),
    ),
    attrs=(),
    symbol_ranges={"V": (1, INT32_MAX)},
)

MODEL_INPUTS = OpSchema(
    name="model_inputs",
    summary="What a chain step's model sees: each slot's token grid with its drafts, its length, each row's position.",
    details=(
        "Slot ``b`` has ``rows = cu[b + 1] - cu[b]`` output rows and its drafts start at column\n"
        "``start = prompt_lens[b] + step_idx[b]``. ``tokens[b, c]`` is ``draft_tokens[b, 1 + min(c - start, K - 1)]``\n"
        "for a slot that does not prefill when ``0 <= c - start < rows - 1``, else ``token_ids_all[b, c]``;\n"
        "``lengths[b]`` is 0 without rows, ``start`` for a prefill (``seq_lens_encoder > 0``), else\n"
        "``start + rows - 1``; ``row_pos[r]`` of a row of slot ``b`` is ``start - 1 + r - cu[b]``, 0 for a padding\n"
        "row. Sums saturate at the int64 range. See docs/ops/model_inputs.md."
    ),
    tensors=(
        Tensor("token_ids_all", ("int64",), "[B, L]", "each slot's committed tokens"),
        _PROMPT_LENS,
        _per_request("step_idx", "int64", "tokens each request generated (its drafts follow them)"),
        _per_request("seq_lens_encoder", "int32", "``> 0``: a prefill (its grid has no drafts)"),
        Tensor("draft_tokens", ("int64",), "[B, K + 1]", "column 0 the last committed token, ``1..K`` drafts"),
        _CU_SEQLENS,
        _BATCH_ID,
        Tensor("tokens", ("int64",), "[B, L]", "each slot's committed tokens, then this step's drafts", output=True),
        Tensor("lengths", ("int64",), "[B]", "valid entries of each slot's ``tokens``", output=True),
        Tensor("row_pos", ("int64",), _ROWS, "the position whose next token each row predicts", output=True),
    ),
    attrs=(),
    result="ModelInputsGrid",
    symbol_ranges={"T": (0, INT32_MAX)},
    device_limits={"xpu": _XPU_LIMITS},
)

PACK_ROWS = OpSchema(
    name="pack_rows",
    summary="A step's rows before the model: slot kinds, a proposer's drafts, the packed rows and the step's record.",
    details=(
        "Slot ``b`` is running iff not stopped and not blocked; a running slot with encoder tokens prefills, one\n"
        "with none and decoder tokens decodes. With a proposal, a decode slot keeps its first\n"
        "``clamp(proposal_lens[b], 0, K)`` drafts in ``draft_tokens[b, 1..]`` (-1 after them) and feeds 1 + that\n"
        "many tokens; a prefill keeps ``seq_lens_this_time``; any other slot gets -1 drafts and 0. Its rows: a\n"
        "decode slot's ``max(seq_lens_this_time, 0)``, a prefill's 1, else 0; ``cu_seqlens_q_output`` their prefix\n"
        "sums (saturated at 2^31 - 1), ``batch_id_per_token_output[r]`` the slot that owns row ``r`` (-1 past\n"
        "them); ``step_record[b]`` = (rows, decode, ``draft_tokens[b, 1..K]``). See docs/ops/pack_rows.md."
    ),
    tensors=(
        _per_request("stop_flags", "bool", "stopped requests get no rows"),
        _per_request("is_block_step", "bool", "blocked requests get no rows"),
        _per_request("seq_lens_encoder", "int32", "``> 0``: a prefill"),
        _per_request("seq_lens_decoder", "int32", "encoder ``== 0`` and decoder ``> 0``: a decode"),
        Tensor("draft_tokens", ("int64",), "[B, K + 1]", "columns ``1..K`` written from a proposal", inplace=True),
        _per_request(
            "seq_lens_this_time", "int32", "tokens each slot feeds the model (written with a proposal)", inplace=True
        ),
        _CU_SEQLENS_INPLACE,
        Tensor(
            "batch_id_per_token_output", ("int32",), _ROWS, "the slot of each output row, -1 past them", inplace=True
        ),
        Tensor(
            "proposal_tokens",
            ("int64",),
            "[B, K]",
            "a proposer's drafts (read only with ``proposal_lens``)",
            optional=True,
        ),
        _per_request("proposal_lens", "int32", "drafts each slot offers; absent: no proposal", optional=True),
        Tensor("step_record", ("int64",), "[B, K + 2]", "per slot: rows, decode (1 or 0), its drafts", output=True),
    ),
    attrs=(),
    result="PackedRows",
    symbol_ranges={"T": (0, INT32_MAX)},
    device_limits={"xpu": _XPU_LIMITS},
)

STEP_STATUS = OpSchema(
    name="step_status",
    summary="What the host reads of a step, in one int64 tensor: the step's record and each slot after the update.",
    details=(
        "``status[b]`` holds ``2K + 8`` values, as two rows of ``K + 4``: ``step_record[b]`` (rows, decode, the\n"
        "``K`` drafts), ``accept_num[b]``, ``accept_tokens[b]`` (``K + 1``), then ``stop_flags[b]`` and\n"
        "``is_block_step[b]`` (1 or 0), ``seq_lens_encoder[b]`` and ``seq_lens_decoder[b]``, each widened to int64.\n"
        "See docs/ops/step_status.md."
    ),
    tensors=(
        Tensor("step_record", ("int64",), "[B, K + 2]", "the step's record (``pack_rows``): rows, decode, drafts"),
        _per_request("accept_num", "int32", "tokens each slot kept this step"),
        Tensor("accept_tokens", ("int64",), "[B, K + 1]", "the kept tokens, -1 past them"),
        _per_request("stop_flags", "bool", "stopped after the update"),
        _per_request("is_block_step", "bool", "blocked"),
        _SEQ_LENS_ENCODER,
        _SEQ_LENS_DECODER,
        Tensor("status", ("int64",), "[B, 2, K + 4]", "each slot's ``2K + 8`` values, in the order above", output=True),
    ),
    attrs=(),
    device_limits={"xpu": _XPU_LIMITS},
)

# the softmax's and the log-probabilities' temperature: the same reading of greedy and non-finite values
_TEMPERATURE = _per_request(
    "temperature", "float32", "each request's temperature; <= 0 (greedy) or not finite reads as 1"
)

TEMPERATURE_SOFTMAX = OpSchema(
    name="temperature_softmax",
    summary="Each output row's probabilities: the softmax of its logits over its request's temperature.",
    details=(
        "Row ``t`` of request ``b`` gets ``exp(x_v - m) / sum_u exp(x_u - m)`` with ``x_v = logits[t, v] * (1 / tau)``,\n"
        "``tau = temperature[b]`` (1 unless it is a finite number >= 2^-126: a greedy request's 0 reads as 1) and\n"
        "``m = max_v x_v``, bit for bit on every backend: exp is the project's own (the entries below ``m - 64``\n"
        "get 0), the sum has a fixed order (256 lane sums folded pairwise) and each float32 operation is rounded\n"
        "on its own. Padding rows, and rows with a NaN logit or whose ``m`` is not finite, are all zeros.\n"
        "See docs/ops/temperature_softmax.md."
    ),
    tensors=(
        Tensor("logits", ("float32",), "[T, V]", "each output row's logits (after process_logits)"),
        _TEMPERATURE,
        _BATCH_ID,
        Tensor(
            "probs", ("float32",), "[T, V]", "each row's probabilities (all zeros for a row without them)", output=True
        ),
    ),
    attrs=(),
    symbol_ranges={"V": (1, INT32_MAX)},
)

MAX_LOGPROBS_WIDTH = 1024  # emitted_logprobs' width: the best tokens a record lists
LOGPROBS_MAX_VOCAB = 2**28  # a key keeps 28 bits of token id (fastspec/core/logprob_keys.py)

EMITTED_LOGPROBS = OpSchema(
    name="emitted_logprobs",
    summary="Each emitted token's log-probability and its row's ``width`` most likely tokens, as int64 keys.",
    details=(
        "Slot ``b``'s token ``j < accept_num[b]`` (``accept_tokens[b, j]``) was drawn at row\n"
        "``t = cu_seqlens_q_output[b] + j`` (``+ accept_nodes[b, j]`` instead of ``+ j`` for a tree). With\n"
        "``s_v = logits[t, v] / tau`` (``tau = temperature[b]``, 1 unless a finite number >= 2^-126) and\n"
        "``m = max_v s_v``, the row's log-probabilities are ``(s_v - m) - log(sum_u exp(s_u - m))`` in float32,\n"
        "bit for bit on every backend (temperature_softmax's exp and sum order, and the project's own log).\n"
        "``logprob_keys[b, j, 0]`` is the token's key, then come the keys of the ``min(width, V)`` tokens of\n"
        "largest ``s_v`` (the smaller id first among equal ones); a key packs a log-probability and an id\n"
        "so that a larger key is a larger log-probability, then a smaller id. A row with a NaN logit or whose\n"
        "``m`` is not finite has every log-probability -inf. Columns past ``V`` and tokens ``j >= accept_num[b]``\n"
        "hold 0. See docs/ops/emitted_logprobs.md."
    ),
    tensors=(
        Tensor("logits", ("float32",), "[T, V]", "each output row's processed logits (after process_logits)"),
        _TEMPERATURE,
        _CU_SEQLENS,
        Tensor(
            "accept_tokens",
            ("int64",),
            "[B, K + 1]",
            "the emitted tokens (an id outside ``[0, V)`` reads as 0 or V - 1)",
        ),
        _per_request("accept_num", "int32", "how many tokens each slot emitted"),
        Tensor(
            "accept_nodes",
            ("int32",),
            "[B, K + 1]",
            "trees: the node whose row drew each emitted token (absent: token ``j``'s row is ``cu[b] + j``)",
            optional=True,
        ),
        Tensor(
            "logprob_keys",
            ("int64",),
            "[B, K + 1, width + 1]",
            "per emitted token: its key, then its row's ``width`` best keys (0 where there is none)",
            output=True,
        ),
    ),
    attrs=(
        Attr(
            "width",
            "int",
            "how many of each row's most likely tokens to list",
            required=True,
            lo=0,
            hi=MAX_LOGPROBS_WIDTH,
            bits=32,
        ),
    ),
    symbol_ranges={"K": (0, None), "V": (1, LOGPROBS_MAX_VOCAB)},
)

APPLY_TOKEN_BITMASK = OpSchema(
    name="apply_token_bitmask",
    summary="Sets the logits of the tokens a row's grammar forbids to -inf, in place (structured output).",
    details=(
        "Row ``t`` with ``m = bitmask_index[t]`` in ``[0, M)`` keeps token ``v`` iff ``v < 32 W`` and bit\n"
        "``v % 32`` of ``token_bitmask[m, v // 32]`` is set (the int32 layout of llguidance, xgrammar and vLLM);\n"
        "every other token of the row becomes -inf. A row whose index lies outside ``[0, M)`` (-1: an\n"
        "unconstrained request, a padding row) is untouched, and kept entries keep their bits.\n"
        "See docs/ops/apply_token_bitmask.md and docs/structured_output.md."
    ),
    tensors=(
        Tensor("logits", PROBS, "[T, V]", "each output row's logits; forbidden tokens become -inf", inplace=True),
        Tensor(
            "token_bitmask",
            ("int32",),
            "[M, W]",
            "allowed-token bits: bit ``i`` of word ``w`` allows token ``32 w + i``; tokens past ``32 W`` are forbidden",
        ),
        Tensor(
            "bitmask_index",
            ("int32",),
            _ROWS,
            "the bitmask row of each logits row; a value outside ``[0, M)`` leaves the row untouched",
        ),
    ),
    attrs=(),
    symbol_ranges={"V": (1, INT32_MAX), "M": (1, INT32_MAX), "W": (1, INT32_MAX)},
    device_limits={},
)

STRATEGIES = ("topp", "greedy", "target_match", "rejection", "block")
# The strategies that verify drafts against the draft model's probabilities (target_probs, draft_probs).
PROBABILITY_STRATEGIES = ("rejection", "block")

# What both verifying ops (verify_draft_tokens, verify_draft_tree) read and write alike, in their order.
_EMITTED = (
    Tensor("accept_tokens", ("int64",), "[B, K + 1]", "emitted tokens, then -1", inplace=True),
    _per_request("accept_num", "int32", "tokens emitted", inplace=True),
)
_SLOT_STATE = (
    _per_request("step_idx", "int64", "generated tokens so far"),
    _per_request("stop_flags", "bool", "stopped requests emit nothing"),
    _per_request("is_block_step", "bool", "blocked requests emit nothing"),
    _SEQ_LENS_ENCODER,
)
_ENDS = (
    _per_request("max_dec_len", "int64", "the request ends at this many generated tokens"),
    Tensor("end_tokens", ("int64",), "[E]", "end-of-sequence ids; ``end_tokens[0]`` ends a request cleanly"),
)

VERIFY_DRAFT_TOKENS = OpSchema(
    name="verify_draft_tokens",
    summary="Judges each request's drafts against the target rows and writes the tokens it emits.",
    details=(
        "Per running slot: accepted drafts (in order, up to the first rejection), then one correction /\n"
        "bonus token; a token that reaches ``max_dec_len`` becomes ``end_tokens[0]`` and an end token stops\n"
        "the walk. Other slots get ``accept_num = 0``. TOPP: a draft is accepted iff among its row's top-p\n"
        "candidates, the correction is drawn from them. GREEDY / TARGET_MATCH: accepted iff equal to the\n"
        "row's target, the correction is the target. REJECTION: accepted iff ``u * q(d) < p(d)`` in masses,\n"
        "the correction drawn from ``max(p - q, 0)``. BLOCK (same inputs; Sun et al.'s block verification):\n"
        "the drafts are judged as one block, with weights ``w_0 = 1``, ``w_i = min(w_{i-1} p(d_i) / q(d_i), 1)``;\n"
        "the longest prefix ``i`` whose coin ``rand64(seed, step_idx, BLOCK, i)`` succeeds is accepted\n"
        "(``i = n``: chance ``w_n``; ``0 < i < n``: ``sum max(w_i p - q, 0) / sum max(q - w_i p, 0)`` over\n"
        "row ``i``), the correction drawn from ``max(w_i p - q, 0)``: lossless, and in expectation it accepts\n"
        "at least as many drafts as REJECTION. See docs/ops/verify_draft_tokens.md."
    ),
    tensors=(
        *_EMITTED,
        Tensor("draft_tokens", ("int64",), "[B, K + 1]", "column 0 the last committed token, ``1..K`` drafts"),
        Tensor(
            "target_tokens",
            ("int64",),
            "[T] | [T, 1]",
            "one target per output row",
            needed_by=("greedy", "target_match"),
        ),
        Tensor(
            "candidate_ids", ("int64",), "[T, Kc]", "each row's candidates (``top_p_candidates``)", needed_by=("topp",)
        ),
        Tensor("candidate_scores", ("float32",), "[T, Kc]", "their probabilities", needed_by=("topp",)),
        Tensor("candidate_lens", ("int32",), _ROWS, "each row's top-p length", needed_by=("topp",)),
        _per_request("seed", "int64", "the request's seed (the random draws)"),
        *_SLOT_STATE,
        _per_request("seq_lens_this_time", "int32", "``1 + drafts`` of a decode slot"),
        _CU_SEQLENS,
        _per_request(
            "reasoning_status", "int32", "1 rejects every draft of the slot; None: no slot is reasoning", optional=True
        ),
        *_ENDS,
        Tensor(
            "target_probs",
            PROBS,
            "[T, V]",
            "the target's distribution ``p`` of each row",
            needed_by=PROBABILITY_STRATEGIES,
        ),
        Tensor(
            "draft_probs",
            PROBS,
            "[T, V]",
            "the draft model's distribution ``q`` of the draft each row judges",
            needed_by=PROBABILITY_STRATEGIES,
        ),
    ),
    attrs=(
        Attr(
            "strategy",
            "str",
            "how drafts are judged: " + ", ".join(f"'{s}'" for s in STRATEGIES) + " (any case) or a ``VerifyStrategy``",
            required=True,
            choices=STRATEGIES,
        ),
        Attr("accept_all", "bool", "accept every draft", default=False),
        Attr("reject_all", "bool", "reject every draft (wins over ``accept_all``)", default=False),
    ),
    result="VerifyResult",
    strategy_attr="strategy",
    symbol_ranges={"K": (0, None), "E": (1, None), "Kc": (1, MAX_CANDIDATE_LEN), "V": (1, INT32_MAX)},
    device_limits={"cuda": {"B": CUDA_MAX_BATCH}, "xpu": _XPU_LIMITS_E},
)

_UPDATE_INPLACE = (
    "seq_lens_encoder",
    "seq_lens_decoder",
    "seq_lens_this_time",
    "step_idx",
    "stop_flags",
    "accept_tokens",
    "accept_num",
    "draft_tokens",
    "token_ids_all",
)

UPDATE_MODEL_STATUS = OpSchema(
    name="update_model_status",
    summary="Commits the accepted tokens of a step and advances every slot's state.",
    details=(
        "Running slots append their kept tokens to ``token_ids_all`` at ``prompt_lens + step_idx``\n"
        "(truncated at the first end or stop token, after the first stop sequence the output ends with\n"
        "once ``min_tokens`` tokens are out, at ``max_dec_len`` and at ``L``), advance ``step_idx`` and the\n"
        "sequence lengths, set ``draft_tokens[b, 0]`` to the last kept token and clear the drafts; an\n"
        "ended request sets ``stop_flags``. Stopped and inactive slots are zeroed; blocked slots only\n"
        "get ``seq_lens_this_time = accept_num = 0``. See docs/ops/update_model_status.md."
    ),
    tensors=(
        _per_request("seq_lens_encoder", "int32", "prefill tokens this step", inplace=True),
        _per_request("seq_lens_decoder", "int32", "tokens in the cache", inplace=True),
        _per_request(
            "seq_lens_this_time", "int32", "tokens this step; 1 after the update for a live request", inplace=True
        ),
        _per_request("step_idx", "int64", "generated tokens", inplace=True),
        _per_request("stop_flags", "bool", "set when a request ends", inplace=True),
        Tensor("accept_tokens", ("int64",), "[B, K + 1]", "the kept tokens, then -1", inplace=True),
        _per_request("accept_num", "int32", "tokens kept", inplace=True),
        Tensor(
            "draft_tokens", ("int64",), "[B, K + 1]", "column 0 becomes the last kept token, the rest -1", inplace=True
        ),
        Tensor("token_ids_all", ("int64",), "[B, L]", "the history; kept tokens are appended", inplace=True),
        _PROMPT_LENS,
        _per_request("is_block_step", "bool", "blocked requests keep their state"),
        _per_request("max_dec_len", "int64", "the request ends at this many generated tokens"),
        Tensor("end_tokens", ("int64",), "[E]", "end-of-sequence ids"),
        Tensor(
            "stop_token_ids",
            ("int64",),
            "[B, S]",
            "each request's stop token ids, -1 for none; they end it as end tokens do. Left out: none",
            optional=True,
        ),
        Tensor(
            "stop_sequences",
            ("int64",),
            "[B, SS]",
            "each request's stop sequences one after another, split at the negative entries (-1);"
            " the request ends after the first one its output ends with. Left out: none",
            optional=True,
        ),
        _per_request(
            "min_tokens", "int64", "a stop sequence counts once this many tokens are out. Left out: 0", optional=True
        ),
        Tensor(
            "has_running",
            ("bool",),
            "[1]",
            "True iff a slot is still running (a device tensor: no host synchronisation)",
            output=True,
        ),
    ),
    attrs=(),
    result="ModelStatus",
    symbol_ranges={"K": (0, None), "E": (1, None), "L": (0, INT32_MAX), "S": (1, None), "SS": (1, None)},
    device_limits={
        "cuda": {"B": CUDA_MAX_BATCH},
        "xpu": {**_XPU_LIMITS_E, "S": XPU_MAX_STOP_COLS, "SS": XPU_MAX_STOP_COLS},
    },
)

_ACCEPTANCE = Tensor(
    "acceptance",
    ("float32",),
    "[B, K + 1]",
    "per slot: column 0 is 1 while the slot decodes (else 0), column ``i`` the estimate of "
    "P(draft i accepted | drafts before it accepted)",
)
_RATES = Tensor(
    "rates",
    ("float32",),
    "[5]",
    "the controller's settings in float32: learning_rate, 1 - learning_rate, 1 - relax_rate, "
    "relax_rate * prior, prior (``fastspec.reference.adaptive.controller_rates``)",
)
_ADAPTIVE_RANGES = {"B": (1, None), "K": (1, 65535), "R": (1, None)}

ADAPTIVE_PLAN = OpSchema(
    name="adaptive_plan",
    header="adaptive.h",
    summary="The draft-length controller's plan: how many drafts each slot verifies this step.",
    details=(
        "Every slot's own token (worth 1 row, cumprod column 0) and its K drafts (``found`` rows each, worth the\n"
        "cumprod of its estimates, draft 1 valued at no less than the prior on a probe step) are ranked by worth;\n"
        "the n best that maximise expected tokens / ``step_cost`` of their rows (plus one row and token per\n"
        "prefilling slot) set the threshold, and ``draft_token_num[b]`` counts the slot's drafts at or above it.\n"
        "Sums run in rank order in float32. See docs/ops/adaptive.md."
    ),
    tensors=(
        _ACCEPTANCE,
        _per_request("found", "float32", "P(the proposer finds the drafts a slot planned)"),
        Tensor("step_cost", ("float32",), "[R]", "seconds of one forward of 1, 2, ..., R rows"),
        _RATES,
        _SEQ_LENS_ENCODER,
        _per_request("stop_flags", "bool", "stopped requests do not prefill"),
        _per_request("is_block_step", "bool", "blocked requests do not prefill"),
        Tensor(
            "probe_step", ("int64",), "[1]", "the step counter of the probe schedule, advanced by one", inplace=True
        ),
        _per_request("draft_token_num", "int32", "the drafts each slot may take (written)", inplace=True),
        Tensor(
            "worth", ("float32",), "[B, K + 1]", "each candidate's expected tokens as ranked (written)", inplace=True
        ),
        Tensor(
            "ranking", ("int32",), "[B, K + 1]", "the flat index of the candidate at each rank (written)", inplace=True
        ),
    ),
    attrs=(
        Attr(
            "probe_interval",
            "int",
            "steps between two probes of a slot (0: no probes)",
            default=0,
            lo=0,
            hi=INT32_MAX,
            bits=32,
        ),
    ),
    result="AdaptivePlan",
    symbol_ranges=_ADAPTIVE_RANGES,
    device_limits={"cuda": {"B": CUDA_MAX_BATCH}, "xpu": _XPU_LIMITS},
)

ADAPTIVE_OBSERVE = OpSchema(
    name="adaptive_observe",
    header="adaptive.h",
    summary="The draft-length controller's update: folds a step's rows and accepted tokens into its estimates.",
    details=(
        "A slot offered ``rows - 1`` drafts (``cu_seqlens_q_output``) and kept ``accept_num``: a tried position\n"
        "moves ``learning_rate`` toward 1 (accepted) or 0 (the first rejected), a position not offered relaxes\n"
        "toward the prior, one behind a rejection learns nothing; a slot with rows decodes next step. A slot\n"
        "that planned drafts and got none learns only ``found``. See docs/ops/adaptive.md."
    ),
    tensors=(
        Tensor("acceptance", ("float32",), "[B, K + 1]", _ACCEPTANCE.doc, inplace=True),
        _per_request("found", "float32", "P(the proposer finds the drafts a slot planned)", inplace=True),
        _per_request("draft_token_num", "int32", "the drafts each slot planned"),
        _CU_SEQLENS,
        _per_request("accept_num", "int32", "tokens kept (accepted drafts + 1)"),
        _RATES,
    ),
    attrs=(),
    result="AdaptiveEstimates",
    symbol_ranges=_ADAPTIVE_RANGES,
    device_limits={"cuda": {"B": CUDA_MAX_BATCH}, "xpu": _XPU_LIMITS},
)

# --- token trees (docs/trees.md) ----------------------------------------------------------

MAX_TREE_NODES = 128  # N: custom_ops/include/fastspec/draft_tree.h kMaxTreeNodes (a test checks they agree)
MAX_TREE_CANDIDATES = 1024  # C: kMaxTreeCandidates
TREE_STRATEGIES = ("greedy", "target_match", "rejection")
_TREE_RANGES = {"N": (1, MAX_TREE_NODES)}

BUILD_DRAFT_TREE = OpSchema(
    name="build_draft_tree",
    header="draft_tree.h",
    summary="Keeps the N best of a drafter's candidates by cumulative score as a token tree (EAGLE-2's rule).",
    details=(
        "Per decode slot, nodes ``1..N-1`` are picked one at a time: the candidate with the highest score\n"
        "(ties: the lower index) among those not yet picked whose parent is the root or already picked and\n"
        "whose depth is at most ``max_depth``; a candidate with token < 0, a NaN score or a parent not\n"
        "before it is never picked. Node 0 (the last committed token) is kept; ``seq_lens_this_time``\n"
        "becomes the node count. Other slots get a root-only tree (an inactive one also\n"
        "``seq_lens_this_time = 0``). See docs/trees.md and docs/ops/draft_tree.md."
    ),
    tensors=(
        Tensor("candidate_tokens", ("int64",), "[B, C]", "the drafter's candidate tokens, -1 for none"),
        Tensor(
            "candidate_parents",
            ("int32",),
            "[B, C]",
            "the candidate each one continues (an earlier index), -1 for a child of the root",
        ),
        Tensor(
            "candidate_scores",
            ("float32",),
            "[B, C]",
            "cumulative scores, higher is better (e.g. the path's draft log-probability)",
        ),
        Tensor(
            "draft_tree_tokens",
            ("int64",),
            "[B, N]",
            "column 0 (the last committed token) is kept, columns ``1..N-1`` get the nodes then -1",
            inplace=True,
        ),
        _per_request(
            "seq_lens_this_time",
            "int32",
            "the node count of a decode slot, 0 for an inactive one, unchanged for a prefill one",
            inplace=True,
        ),
        _SEQ_LENS_ENCODER,
        _SEQ_LENS_DECODER,
        Tensor(
            "draft_tree_parents",
            ("int32",),
            "[B, N]",
            "each node's parent (before it), -1 for node 0 and unused nodes",
            output=True,
        ),
        Tensor(
            "draft_tree_depths",
            ("int32",),
            "[B, N]",
            "each node's depth (node 0: 0; its position is ``seq_lens_decoder + depth``), -1 for unused nodes",
            output=True,
        ),
    ),
    attrs=(
        Attr(
            "max_depth",
            "int",
            "deepest node kept (K: a tree is verified into ``[B, K + 1]`` accepted tokens)",
            required=True,
            lo=1,
            hi=MAX_TREE_NODES - 1,
            bits=32,
        ),
    ),
    result="DraftTree",
    symbol_ranges={**_TREE_RANGES, "C": (1, MAX_TREE_CANDIDATES)},
    device_limits={"cuda": {"B": CUDA_MAX_BATCH}},
)

VERIFY_DRAFT_TREE = OpSchema(
    name="verify_draft_tree",
    header="draft_tree.h",
    summary="Walks each request's draft tree from the root along the target's tokens and writes what it emits.",
    details=(
        "Node ``i`` of a decode slot is scored by row ``cu_seqlens_q_output[b] + i``. From node 0, each node\n"
        "emits one token (GREEDY / TARGET_MATCH: the row's target; REJECTION: SpecInfer's multi-draft rule,\n"
        "the children tried in index order against the renormalised residual, else a draw from the last\n"
        "residual, a bonus draw at a leaf), then the walk moves to the child carrying that token or stops.\n"
        "``accept_nodes`` lists the node whose row decided each emitted token (the path whose cache a\n"
        "runner keeps). A malformed tree (a parent not before its child, depth over K, more nodes than N)\n"
        "judges no drafts in the kernels; the array API and the reference refuse it with an error naming\n"
        "``draft_tree_parents``. See docs/trees.md and docs/ops/draft_tree.md."
    ),
    tensors=(
        *_EMITTED,
        Tensor("draft_tree_tokens", ("int64",), "[B, N]", "column 0 the last committed token, then the nodes"),
        Tensor("draft_tree_parents", ("int32",), "[B, N]", "each node's parent (before it), -1 for node 0"),
        Tensor(
            "target_tokens",
            ("int64",),
            "[T] | [T, 1]",
            "one target per output row (one row per node)",
            needed_by=("greedy", "target_match"),
        ),
        _per_request("seed", "int64", "the request's seed (REJECTION's draws)", needed_by=("rejection",)),
        *_SLOT_STATE,
        _per_request("seq_lens_this_time", "int32", "the node count of a decode slot"),
        _CU_SEQLENS,
        *_ENDS,
        Tensor(
            "target_probs",
            PROBS,
            "[T, V]",
            "the target's distribution ``p`` of each node's row",
            needed_by=("rejection",),
        ),
        Tensor(
            "draft_probs",
            PROBS,
            "[T, V]",
            "the draft distribution ``q`` a node's children were drawn from",
            needed_by=("rejection",),
        ),
        Tensor(
            "accept_nodes",
            ("int32",),
            "[B, K + 1]",
            "the node whose row decided each emitted token, then -1",
            output=True,
        ),
    ),
    attrs=(
        Attr(
            "strategy",
            "str",
            "how nodes are judged: "
            + ", ".join(f"'{s}'" for s in TREE_STRATEGIES)
            + " (any case; see docs/ops/draft_tree.md)",
            required=True,
            choices=TREE_STRATEGIES,
        ),
    ),
    result="TreeVerifyResult",
    strategy_attr="strategy",
    symbol_ranges={**_TREE_RANGES, "K": (0, MAX_TREE_NODES - 1), "E": (1, None), "V": (1, INT32_MAX)},
    device_limits={"cuda": {"B": CUDA_MAX_BATCH}, "xpu": {"E": XPU_MAX_END_TOKENS}},
)

# --- sampling parameters (docs/ops/process_logits.md) -------------------------------------

PROCESS_LOGITS = OpSchema(
    name="process_logits",
    summary="Applies each request's penalties, logit bias and bans to its output rows, each row with its own history.",
    details=(
        "Row ``t`` of request ``b`` is node ``j = clamp(t - cu_seqlens_q_output[b], 0, K)``; its history is the\n"
        "prompt, the committed output and the drafts on the path from the root to node ``j`` (a chain: drafts\n"
        "``1..j``; with ``draft_parents``, node ``j``'s ancestors and ``j``). In order: the repetition penalty over\n"
        "the history (a logit > 0 divided, any other multiplied), the presence and frequency penalties over the\n"
        "output and drafts (``x - frequency * count - presence``), the bias entries added in column order, then\n"
        "-inf for a bad word's last token where the output ends with the rest of it and, while\n"
        "``step_idx + j < min_tokens``, for the end tokens and the request's stop token ids. Ids outside\n"
        "``[0, V)`` touch nothing. See docs/ops/process_logits.md."
    ),
    tensors=(
        Tensor("logits", ("float32",), "[T, V]", "the output rows' logits, processed in place", inplace=True),
        Tensor("token_ids_all", ("int64",), "[B, L]", "the prompt in ``[0, prompt_lens[b])``, then the output"),
        _PROMPT_LENS,
        _per_request("step_idx", "int64", "output tokens committed so far"),
        Tensor(
            "draft_tokens",
            ("int64",),
            "[B, K + 1]",
            "column 0 the last committed token, then the drafts (a chain) or the tree's nodes",
        ),
        _BATCH_ID,
        _CU_SEQLENS,
        _per_request(
            "repetition_penalty",
            "float32",
            "1: off; a logit of a token in the history is divided (> 0) or multiplied by it",
        ),
        _per_request("presence_penalty", "float32", "0: off; subtracted once from a token in the output"),
        _per_request("frequency_penalty", "float32", "0: off; subtracted once per occurrence in the output"),
        _per_request("min_tokens", "int64", "end and stop tokens are banned while fewer tokens are out"),
        Tensor("end_tokens", ("int64",), "[E]", "end-of-sequence ids (banned under ``min_tokens``)"),
        Tensor("stop_token_ids", ("int64",), "[B, S]", "each request's stop token ids, -1 for none"),
        Tensor("logit_bias_ids", ("int64",), "[B, NB]", "the token each bias entry adds to, -1 for none"),
        Tensor("logit_bias_values", ("float32",), "[B, NB]", "the value each bias entry adds"),
        Tensor(
            "bad_words",
            ("int64",),
            "[B, BW]",
            "each request's banned sequences one after another, split at the negative entries (-1)",
        ),
        Tensor(
            "draft_parents",
            ("int32",),
            "[B, K + 1]",
            "a tree's parents (node 0: -1); row ``j``'s drafts are node ``j``'s path from the root. Left out: a chain",
            optional=True,
        ),
    ),
    attrs=(),
    symbol_ranges={
        "K": (0, MAX_TREE_NODES - 1),
        "E": (1, None),
        "V": (1, INT32_MAX),
        "L": (0, INT32_MAX),
        "S": (1, None),
        "NB": (1, None),
        "BW": (1, None),
    },
)

SCHEMAS: dict[str, OpSchema] = {
    op.name: op
    for op in (
        NGRAM_MATCH,
        NGRAM_APPEND,
        TOP_P_CANDIDATES,
        SAMPLE_TOKENS,
        TOP_K_TOP_P_PROBS,
        VERIFY_DRAFT_TOKENS,
        UPDATE_MODEL_STATUS,
        ADAPTIVE_PLAN,
        ADAPTIVE_OBSERVE,
        BUILD_DRAFT_TREE,
        VERIFY_DRAFT_TREE,
        PROCESS_LOGITS,
        TEMPERATURE_SOFTMAX,
        EMITTED_LOGPROBS,
        APPLY_TOKEN_BITMASK,
        PACK_ROWS,
        MODEL_INPUTS,
        STEP_STATUS,
    )
}


class VerifyStrategy(str, enum.Enum):
    """The strategies of ``verify_draft_tokens``; the value is the op's strategy name."""

    TOPP = "topp"  # draft accepted iff among its row's top-p candidates; correction drawn from them
    GREEDY = "greedy"  # draft accepted iff equal to the target token; correction = target
    TARGET_MATCH = "target_match"  # GREEDY's rule on sampled targets (lossless for one-hot drafts)
    REJECTION = "rejection"  # draft-model probabilities: accept iff u * q(d) < p(d), residual on rejection
    BLOCK = "block"  # REJECTION's inputs, the drafts judged as one block: lossless, accepts at least as much

"""``ngram_match``: n-gram prompt-lookup drafts (SPEC.md "ngram_match")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastspec.ops._library import run_op

if TYPE_CHECKING:
    import paddle


def ngram_match(
    token_ids_all: paddle.Tensor,
    prompt_lens: paddle.Tensor,
    step_idx: paddle.Tensor,
    draft_token_num: paddle.Tensor,
    draft_tokens: paddle.Tensor,
    seq_lens_this_time: paddle.Tensor,
    seq_lens_encoder: paddle.Tensor,
    seq_lens_decoder: paddle.Tensor,
    max_dec_len: paddle.Tensor,
    *,
    max_ngram_size: int,
    min_ngram_size: int = 1,
    token_budget: int = 0,
) -> tuple[paddle.Tensor, paddle.Tensor]:
    """Proposes drafts by looking the newest generated n-gram up in the prompt, then in the output.

    Args:
        token_ids_all: int64 ``[B, L]``; the prompt in ``[0, prompt_lens[b])``, then the
            generated tokens.
        prompt_lens: int64 ``[B]`` (or ``[B, 1]``, as every per-request tensor).
        step_idx: int64 ``[B]``, the number of generated tokens; the query is the last
            ``n`` of them.
        draft_token_num: int32 ``[B]``, drafts each request may take.
        draft_tokens: int64 ``[B, K + 1]``, in place: column 0 (the last committed token) is
            kept, columns ``1..K`` get the drafts then ``-1``.
        seq_lens_this_time: int32 ``[B]``, in place: ``1 + drafts`` for a decode slot, 0 for
            an inactive one, unchanged for a prefill one.
        seq_lens_encoder, seq_lens_decoder: int32 ``[B]``, the slot kinds.
        max_dec_len: int64 ``[B]``; a request never drafts past ``max_dec_len - 1``.
        max_ngram_size: longest n-gram tried (>= 1).
        min_ngram_size: shortest n-gram tried, in ``[1, max_ngram_size]``.
        token_budget: tokens the whole step may take (base tokens of every running slot
            included); ``<= 0`` means unlimited.

    Returns:
        ``(draft_tokens, seq_lens_this_time)``, the in-place tensors.

    Raises:
        ValueError: naming the argument, for a wrong dtype, rank, shape, place or attribute.
    """
    return _run("ngram_match", locals())


def ngram_append(
    token_ids_all: paddle.Tensor,
    prompt_lens: paddle.Tensor,
    step_idx: paddle.Tensor,
    draft_token_num: paddle.Tensor,
    draft_tokens: paddle.Tensor,
    seq_lens_this_time: paddle.Tensor,
    seq_lens_encoder: paddle.Tensor,
    seq_lens_decoder: paddle.Tensor,
    max_dec_len: paddle.Tensor,
    *,
    max_ngram_size: int,
    min_ngram_size: int = 1,
    token_budget: int = 0,
) -> tuple[paddle.Tensor, paddle.Tensor]:
    """Hybrid drafting: keeps a draft model's drafts and fills the remaining columns from an n-gram match.

    Same arguments as :func:`ngram_match`. For a decode slot the model's drafts are
    ``draft_tokens[b, 1..m]`` with ``m = seq_lens_this_time[b] - 1`` (clamped to ``[0, K]``, then
    cut to ``md = min(draft_token_num, K, max_dec_len - step_idx - 1)``); they are kept and read as
    continuing the generated tokens, and up to ``md - m`` more drafts are appended from the n-gram
    match (ngram_match's rules) of that extended sequence. ``seq_lens_this_time = 1 + drafts``;
    the token budget then trims from the end, exactly as in ngram_match. Prefill slots are
    untouched, inactive slots cleared. See ``docs/ops/ngram_append.md``.

    Returns:
        ``(draft_tokens, seq_lens_this_time)``, the in-place tensors.

    Raises:
        ValueError / TypeError: as :func:`ngram_match`.
    """
    return _run("ngram_append", locals())


def _check_attrs(op: str, max_ngram_size: int, min_ngram_size: int, token_budget: int) -> None:
    for name, value in (("max_ngram_size", max_ngram_size), ("min_ngram_size", min_ngram_size), ("token_budget", token_budget)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"{op}: attribute '{name}' must be an int, got {type(value).__name__}")
    if max_ngram_size < 1:
        raise ValueError(f"{op}: attribute 'max_ngram_size' must be >= 1, got {max_ngram_size}")
    if not 1 <= min_ngram_size <= max_ngram_size:
        raise ValueError(f"{op}: attribute 'min_ngram_size' must be in [1, max_ngram_size = {max_ngram_size}], got {min_ngram_size}")


INPUTS = ("token_ids_all", "prompt_lens", "step_idx", "draft_token_num", "draft_tokens",
          "seq_lens_this_time", "seq_lens_encoder", "seq_lens_decoder", "max_dec_len")
ATTRS = ("max_ngram_size", "min_ngram_size", "token_budget")


def _run(op: str, args: dict) -> tuple[paddle.Tensor, paddle.Tensor]:
    """Checks the attributes and runs ``fastspec_<op>`` on the call's arguments (both ops share them)."""
    _check_attrs(op, *(args[name] for name in ATTRS))
    run_op(
        f"fastspec_{op}",
        {name: args[name] for name in INPUTS},
        {name: args[name] for name in ATTRS},
        ["draft_tokens_out", "seq_lens_this_time_out"],
        inplace={"draft_tokens_out": "draft_tokens", "seq_lens_this_time_out": "seq_lens_this_time"},
    )
    return args["draft_tokens"], args["seq_lens_this_time"]

"""``verify_draft_tokens``: judge the drafts and emit the accepted tokens (SPEC.md "verify_draft_tokens")."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

from fastspec.ops._library import run_op

if TYPE_CHECKING:
    import paddle


class VerifyStrategy(str, enum.Enum):
    """How drafts are judged; the value is the op's strategy name."""

    TOPP = "topp"  # draft accepted iff among its row's top-p candidates; correction drawn from them
    GREEDY = "greedy"  # draft accepted iff equal to the target token; correction = target
    TARGET_MATCH = "target_match"  # GREEDY's rule on sampled targets (lossless for one-hot drafts)
    REJECTION = "rejection"  # draft-model probabilities: accept iff u * q(d) < p(d), residual on rejection


def strategy_name(strategy: str | VerifyStrategy) -> str:
    """The canonical (lower-case) name of ``strategy``; raises for unknown or unimplemented ones."""
    if isinstance(strategy, VerifyStrategy):
        name = strategy.value
    elif isinstance(strategy, str):
        name = strategy.lower()
    else:
        raise TypeError(f"verify_draft_tokens: attribute 'strategy' must be a str or VerifyStrategy, got {type(strategy).__name__}")
    if name not in ("topp", "greedy", "target_match", "rejection"):
        raise ValueError(
            f"verify_draft_tokens: attribute 'strategy' must be one of 'topp', 'greedy', 'target_match', 'rejection', got {strategy!r}"
        )
    return name


def verify_draft_tokens(
    accept_tokens: paddle.Tensor,
    accept_num: paddle.Tensor,
    draft_tokens: paddle.Tensor,
    target_tokens: paddle.Tensor | None,
    candidate_ids: paddle.Tensor | None,
    candidate_scores: paddle.Tensor | None,
    candidate_lens: paddle.Tensor | None,
    seed: paddle.Tensor,
    step_idx: paddle.Tensor,
    stop_flags: paddle.Tensor,
    is_block_step: paddle.Tensor,
    seq_lens_encoder: paddle.Tensor,
    seq_lens_this_time: paddle.Tensor,
    cu_seqlens_q_output: paddle.Tensor,
    reasoning_status: paddle.Tensor | None,
    max_dec_len: paddle.Tensor,
    end_tokens: paddle.Tensor,
    *,
    strategy: str | VerifyStrategy,
    accept_all: bool = False,
    reject_all: bool = False,
    target_probs: paddle.Tensor | None = None,
    draft_probs: paddle.Tensor | None = None,
) -> tuple[paddle.Tensor, paddle.Tensor]:
    """Judges each request's drafts against the target rows and writes the tokens it emits.

    Per running slot: accepted drafts (in order, up to the first rejection), then one
    correction / bonus token; a token that reaches ``max_dec_len`` becomes ``end_tokens[0]``
    and an end token stops the walk. Other slots get ``accept_num = 0``.

    Args:
        accept_tokens: int64 ``[B, K + 1]``, in place: emitted tokens, then ``-1``.
        accept_num: int32 ``[B]`` (or ``[B, 1]``, as every per-request tensor), in place.
        draft_tokens: int64 ``[B, K + 1]``; column 0 the last committed token, ``1..K`` drafts.
        target_tokens: int64 ``[T]``, one target per output row (GREEDY, TARGET_MATCH), else None.
        candidate_ids: int64 ``[T, K']`` (TOPP), else None.
        candidate_scores: float32 ``[T, K']`` (TOPP), else None.
        candidate_lens: int32 ``[T]`` (TOPP), else None.
        seed: int64 ``[B]``, the request's seed (TOPP correction draw).
        step_idx: int64 ``[B]``, generated tokens so far.
        stop_flags, is_block_step: bool ``[B]``.
        seq_lens_encoder, seq_lens_this_time: int32 ``[B]``.
        cu_seqlens_q_output: int32 ``[B + 1]``, the request's output rows.
        reasoning_status: int32 ``[B]`` or None; 1 rejects every draft of the slot.
        max_dec_len: int64 ``[B]``.
        end_tokens: int64 ``[E]``, ``E >= 1``.
        strategy: "topp", "greedy" or "target_match" (any case) or a ``VerifyStrategy``.
        accept_all: accept every (non-negative) draft.
        reject_all: reject every draft (wins over ``accept_all``).
        target_probs, draft_probs: REJECTION only, ``[T, V]`` float32 / float16 / bfloat16 (both
            the same): the target's distribution ``p`` of each row and the draft model's ``q`` of the
            draft that row judges. Draft ``d`` is accepted iff ``u * q(d) < p(d)`` in masses
            (``u`` from ``rand64(seed, step_idx + i, ACCEPT)``); at the first rejection the token is
            drawn from ``max(p - q, 0)`` (else ``p``), after full acceptance (or skipped drafts) the
            bonus from ``p`` (stream RESAMPLE). See docs/ops/verify_draft_tokens.md.

    Returns:
        ``(accept_tokens, accept_num)``, the in-place tensors.

    Raises:
        ValueError: unknown or unimplemented strategy; naming the argument, for a missing
            tensor the strategy needs, a wrong dtype, rank, shape or place, or a batch above
            the CUDA limit (``FastspecArgumentError``).
        TypeError: a strategy that is not a string, or a switch that is not a bool.
    """
    name = strategy_name(strategy)
    for attr, value in (("accept_all", accept_all), ("reject_all", reject_all)):
        if not isinstance(value, bool):
            raise TypeError(f"verify_draft_tokens: attribute '{attr}' must be a bool, got {type(value).__name__}")
    needed = {"topp": ("candidate_ids", "candidate_scores", "candidate_lens"),
              "rejection": ("target_probs", "draft_probs")}.get(name, ("target_tokens",))
    given = {"target_tokens": target_tokens, "candidate_ids": candidate_ids,
             "candidate_scores": candidate_scores, "candidate_lens": candidate_lens,
             "target_probs": target_probs, "draft_probs": draft_probs}
    for arg in needed:
        if given[arg] is None:
            raise ValueError(f"verify_draft_tokens: argument '{arg}' is required by strategy '{name}', got None")
    inputs = {
        "accept_tokens": accept_tokens,
        "accept_num": accept_num,
        "draft_tokens": draft_tokens,
        "target_tokens": target_tokens,
        "candidate_ids": candidate_ids,
        "candidate_scores": candidate_scores,
        "candidate_lens": candidate_lens,
        "seed": seed,
        "step_idx": step_idx,
        "stop_flags": stop_flags,
        "is_block_step": is_block_step,
        "seq_lens_encoder": seq_lens_encoder,
        "seq_lens_this_time": seq_lens_this_time,
        "cu_seqlens_q_output": cu_seqlens_q_output,
        "reasoning_status": reasoning_status,
        "max_dec_len": max_dec_len,
        "end_tokens": end_tokens,
        "target_probs": target_probs if name == "rejection" else None,
        "draft_probs": draft_probs if name == "rejection" else None,
    }
    run_op(
        "fastspec_verify_draft_tokens",
        inputs,
        {"strategy": name, "accept_all": accept_all, "reject_all": reject_all},
        ["accept_tokens_out", "accept_num_out"],
        inplace={"accept_tokens_out": "accept_tokens", "accept_num_out": "accept_num"},
    )
    return accept_tokens, accept_num

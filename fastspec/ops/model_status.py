"""``update_model_status``: the one state update after a step (SPEC.md "update_model_status")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastspec.ops._library import run_op

if TYPE_CHECKING:
    import paddle

_INPLACE = ("seq_lens_encoder", "seq_lens_decoder", "seq_lens_this_time", "step_idx", "stop_flags",
            "accept_tokens", "accept_num", "draft_tokens", "token_ids_all")


def update_model_status(
    seq_lens_encoder: paddle.Tensor,
    seq_lens_decoder: paddle.Tensor,
    seq_lens_this_time: paddle.Tensor,
    step_idx: paddle.Tensor,
    stop_flags: paddle.Tensor,
    accept_tokens: paddle.Tensor,
    accept_num: paddle.Tensor,
    draft_tokens: paddle.Tensor,
    token_ids_all: paddle.Tensor,
    prompt_lens: paddle.Tensor,
    is_block_step: paddle.Tensor,
    max_dec_len: paddle.Tensor,
    end_tokens: paddle.Tensor,
) -> tuple[paddle.Tensor, ...]:
    """Commits the accepted tokens of a step and advances every slot's state.

    Running slots append their kept tokens to ``token_ids_all`` at
    ``prompt_lens + step_idx`` (truncated at the first end token, at ``max_dec_len`` and at
    ``L``), advance ``step_idx`` and the sequence lengths, set ``draft_tokens[b, 0]`` to the
    last kept token and clear the drafts; an ended request sets ``stop_flags``. Stopped and
    inactive slots are zeroed; blocked slots only get ``seq_lens_this_time = accept_num = 0``.

    Args:
        seq_lens_encoder, seq_lens_decoder, seq_lens_this_time: int32 ``[B]`` (or ``[B, 1]``), in place.
        step_idx: int64 ``[B]``, in place: generated tokens.
        stop_flags: bool ``[B]``, in place.
        accept_tokens: int64 ``[B, K + 1]``, in place: the kept tokens, then ``-1``.
        accept_num: int32 ``[B]``, in place: tokens kept.
        draft_tokens: int64 ``[B, K + 1]``, in place.
        token_ids_all: int64 ``[B, L]``, in place: the history.
        prompt_lens: int64 ``[B]``.
        is_block_step: bool ``[B]``.
        max_dec_len: int64 ``[B]``.
        end_tokens: int64 ``[E]``, ``E >= 1``.

    Returns:
        The nine in-place tensors in the order above, then ``has_running``: bool ``[1]`` on the
        same place (no host synchronisation), True iff a slot is still running.

    Raises:
        ValueError: naming the argument, for a wrong dtype, rank, shape or place, or a batch
            above the CUDA limit (``FastspecArgumentError``).
    """
    args = (seq_lens_encoder, seq_lens_decoder, seq_lens_this_time, step_idx, stop_flags,
            accept_tokens, accept_num, draft_tokens, token_ids_all)
    inputs = dict(zip(_INPLACE, args))
    inputs.update(prompt_lens=prompt_lens, is_block_step=is_block_step, max_dec_len=max_dec_len,
                  end_tokens=end_tokens)
    outs = run_op(
        "fastspec_update_model_status",
        inputs,
        {},
        [f"{name}_out" for name in _INPLACE] + ["has_running"],
        inplace={f"{name}_out": name for name in _INPLACE},
    )
    return (*args, outs[-1])

"""Draft trees from a proposer (docs/trees.md): the candidates it offers, how a draft head's top-k per depth
become them (EAGLE-2's expansion), and how they become the state's ``[B, N]`` tree (``build_draft_tree``).
Device tensors and fixed shapes only, so all of it can sit in a static or captured step."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import paddle

from fastspec import ops
from fastspec.runtime.state import SpecState


@dataclass
class TreeProposal:
    """``build_draft_tree``'s candidates: ``tokens`` int64 ``[B, C]`` (-1: none), ``parents`` int32 ``[B, C]``
    (an earlier candidate, -1: a child of node 0), ``scores`` float32 ``[B, C]`` (cumulative, higher is better)."""

    tokens: paddle.Tensor
    parents: paddle.Tensor
    scores: paddle.Tensor


def empty_tree_proposal(batch: int, count: int) -> TreeProposal:
    """No candidates: every decode slot gets the root-only tree (one row, no drafts)."""
    return TreeProposal(
        paddle.full([batch, count], -1, dtype="int64"),
        paddle.full([batch, count], -1, dtype="int32"),
        paddle.zeros([batch, count], dtype="float32"),
    )


def top_k_rows(x: paddle.Tensor, k: int) -> tuple[paddle.Tensor, paddle.Tensor]:
    """The ``k`` largest entries of each row of ``x [R, M]``, best first: ``(values [R, k], indices int64
    [R, k])``; ties go to the lower index (k argmax passes: ``paddle.topk`` does not promise an order for ties)."""
    values, indices = [], []
    floor = paddle.full_like(x, float("-inf"))
    for _ in range(k):
        index = paddle.argmax(x, axis=-1, keepdim=True)  # the first maximum
        values.append(paddle.take_along_axis(x, index, axis=-1))
        indices.append(index)
        x = paddle.where(paddle.arange(x.shape[-1], dtype="int64").unsqueeze(0) == index, floor, x)
    return paddle.concat(values, axis=-1), paddle.concat(indices, axis=-1)


def head_top_k_tree(
    head: Callable,
    input_ids: paddle.Tensor,
    target_hidden: paddle.Tensor,
    depth: int,
    top_k: int,
    chain_hidden_states: bool,
) -> TreeProposal:
    """EAGLE-2's candidates from a draft head: at each depth the ``top_k`` best continuations (by cumulative
    log-probability) of the previous depth's ``top_k``, so ``C = depth * top_k``.

    Depth 1 feeds each slot's last token and ``target_hidden``; a later depth feeds each candidate's token
    and the head's output hidden state of its parent's step (``chain_hidden_states``) or ``target_hidden``
    again. The best ``top_k`` of ``rows * V`` cumulative scores are the best of each row's own best ``top_k``
    (EAGLE-2's two-stage pick) in one pass; ties go to the lower (parent, token).
    """
    batch = int(input_ids.shape[0])
    tokens, parents, scores = [], [], []
    ids, hidden, score, rows = input_ids, target_hidden, paddle.zeros([batch, 1], dtype="float32"), 1
    for d in range(depth):
        logits, hidden_out = head(ids, hidden)
        vocab = int(logits.shape[-1])
        logp = paddle.nn.functional.log_softmax(logits.astype("float32"), axis=-1)
        total = (score.reshape([-1, 1]) + logp).reshape([batch, rows * vocab])
        score, index = top_k_rows(total, top_k)
        source, token = index // vocab, index % vocab  # source: the parent among the previous depth's candidates
        tokens.append(token)
        parents.append((source + (d - 1) * top_k).astype("int32") if d else paddle.full_like(source, -1, dtype="int32"))
        scores.append(score)
        parent_rows = (paddle.arange(batch, dtype="int64").unsqueeze(-1) * rows + source).reshape([-1])
        own_rows = paddle.arange(batch, dtype="int64").unsqueeze(-1).expand([batch, top_k]).reshape([-1])
        hidden = (
            paddle.gather(hidden_out, parent_rows) if chain_hidden_states else paddle.gather(target_hidden, own_rows)
        )
        ids, rows = token.reshape([-1]), top_k
    return TreeProposal(paddle.concat(tokens, axis=1), paddle.concat(parents, axis=1), paddle.concat(scores, axis=1))


def write_tree(proposal: TreeProposal, state: SpecState) -> None:
    """Builds each decode slot's tree into the state (``build_draft_tree``, depth at most K): node 0 is the last
    committed token, ``seq_lens_this_time`` becomes the node count, cut where the slot's nodes would run past
    ``token_ids_all`` (a model lays node ``i`` at ``prompt_lens + step_idx - 1 + i``; docs/trees.md)."""
    state.draft_tree_tokens[:, 0] = state.draft_tokens[:, 0]  # in place (a slice would be a copy in a static program)
    tree = ops.build_draft_tree(
        proposal.tokens,
        proposal.parents,
        proposal.scores,
        state.draft_tree_tokens,
        state.seq_lens_this_time,
        state.seq_lens_encoder,
        state.seq_lens_decoder,
        max_depth=state.num_speculative_tokens,
    )
    paddle.assign(tree.draft_tree_parents, output=state.draft_tree_parents)
    paddle.assign(tree.draft_tree_depths, output=state.draft_tree_depths)
    room = state.max_model_len + 1 - state.prompt_lens - state.step_idx
    room = paddle.clip(room, 1, state.num_tree_nodes).astype("int32")
    decode = state.slot_phases()[1]
    lens = state.seq_lens_this_time
    paddle.assign(paddle.where(decode, paddle.minimum(lens, room), lens), output=state.seq_lens_this_time)

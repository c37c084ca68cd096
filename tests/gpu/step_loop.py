"""One decoding step over fixed-shape buffers, as a CUDA Graph captures it, plus the same step on
the numpy references. Framework-free: the buffers may be torch tensors (CUDA) or numpy arrays
(the kernels' CPU path), so the driver itself can be checked without a GPU.

Row layout is static: request b owns rows b*(K+1) .. b*(K+1)+K (enough for any decode step),
so cu_seqlens_q_output and batch_id_per_token_output never change between replays.
"""

from __future__ import annotations

import numpy as np

from fastspec import arrays
from fastspec import reference as ref
from tests.helpers.op_names import NGRAM_NAMES, UPDATE_NAMES, UPDATE_OUTPUTS

B, K, L, V, K_CAND, STEPS = 16, 4, 256, 32, 6, 8
T = B * (K + 1)
END = 0


def graph_loop_state(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Decode slots with some history (Markov text that repeats), one stopped, one blocked."""
    table = rng.random((V, V)).astype(np.float32) * 0.2 / V
    table[np.arange(V), rng.permutation(V)] += 0.75
    table[:, END] = 0.004
    table /= table.sum(axis=1, keepdims=True)
    prompt_lens = rng.integers(8, 40, size=B).astype(np.int64)
    step_idx = rng.integers(1, 10, size=B).astype(np.int64)
    tokens = np.zeros((B, L), np.int64)
    for b in range(B):
        t = int(rng.integers(1, V))
        for i in range(prompt_lens[b] + step_idx[b]):
            tokens[b, i] = t
            t = int(np.argmax(table[t])) if rng.random() < 0.8 else int(rng.integers(1, V))
    draft_tokens = np.full((B, K + 1), -1, np.int64)
    draft_tokens[:, 0] = tokens[np.arange(B), prompt_lens + step_idx - 1]
    stop_flags = np.zeros(B, np.bool_)
    stop_flags[1] = True
    is_block_step = np.zeros(B, np.bool_)
    is_block_step[2] = True
    return {
        "token_ids_all": tokens,
        "prompt_lens": prompt_lens,
        "step_idx": step_idx,
        "draft_token_num": np.full(B, K, np.int32),
        "draft_tokens": draft_tokens,
        "seq_lens_this_time": np.ones(B, np.int32),
        "seq_lens_encoder": np.zeros(B, np.int32),
        "seq_lens_decoder": (prompt_lens + step_idx).astype(np.int32),
        "max_dec_len": step_idx + rng.integers(3, 40, size=B),
        "stop_flags": stop_flags,
        "is_block_step": is_block_step,
        "accept_tokens": np.full((B, K + 1), -1, np.int64),
        "accept_num": np.zeros(B, np.int32),
        "seed": np.zeros(B, np.int64),
        "top_p": np.full(B, 0.9, np.float32),
        "top_k": np.zeros(B, np.int32),
        "end_tokens": np.array([END], np.int64),
        "cu_seqlens_q_output": (np.arange(B + 1) * (K + 1)).astype(np.int32),
        "batch_id_per_token_output": np.repeat(np.arange(B, dtype=np.int32), K + 1),
        "table": table,
        "probs": np.zeros((T, V), np.float32),
        "target_tokens": np.zeros(T, np.int64),
        "candidate_ids": np.zeros((T, K_CAND), np.int64),
        "candidate_scores": np.zeros((T, K_CAND), np.float32),
        "candidate_lens": np.zeros(T, np.int32),
        "has_running": np.zeros(1, np.bool_),
    }


def _model(bufs: dict) -> None:
    """The 'target model': row b*(K+1)+i predicts after draft_tokens[b, i] (a Markov table)."""
    inputs, table, probs = bufs["draft_tokens"].reshape(-1), bufs["table"], bufs["probs"]
    if isinstance(probs, np.ndarray):
        probs[...] = table[np.maximum(inputs, 0)]
    else:  # torch, graph-safe: no host synchronisation
        import torch

        torch.index_select(table, 0, inputs.clamp(min=0), out=probs)


def _argmax(bufs: dict) -> None:
    probs, out = bufs["probs"], bufs["target_tokens"]
    if isinstance(probs, np.ndarray):
        out[...] = np.argmax(probs, axis=1)
    else:
        out.copy_(probs.argmax(dim=1))


def run_step(bufs: dict, strategy: str) -> None:
    """propose -> targets -> verify -> update on the kernels, in place, with no host synchronisation."""
    b = bufs
    arrays.ngram_match(*(b[n] for n in NGRAM_NAMES), max_ngram_size=3)
    _model(b)
    if strategy == "greedy":
        _argmax(b)
    elif strategy == "target_match":
        arrays.sample_tokens(
            b["probs"],
            b["top_p"],
            b["top_k"],
            b["seed"],
            b["step_idx"],
            b["batch_id_per_token_output"],
            b["cu_seqlens_q_output"],
            tokens=b["target_tokens"],
        )
    else:
        arrays.top_p_candidates(
            b["probs"],
            b["top_p"],
            b["batch_id_per_token_output"],
            candidate_ids=b["candidate_ids"],
            candidate_scores=b["candidate_scores"],
            candidate_lens=b["candidate_lens"],
            max_candidate_len=K_CAND,
        )
    topp = strategy == "topp"
    arrays.verify_draft_tokens(
        b["accept_tokens"],
        b["accept_num"],
        b["draft_tokens"],
        None if topp else b["target_tokens"],
        b["candidate_ids"] if topp else None,
        b["candidate_scores"] if topp else None,
        b["candidate_lens"] if topp else None,
        b["seed"],
        b["step_idx"],
        b["stop_flags"],
        b["is_block_step"],
        b["seq_lens_encoder"],
        b["seq_lens_this_time"],
        b["cu_seqlens_q_output"],
        None,
        b["max_dec_len"],
        b["end_tokens"],
        strategy=strategy,
    )
    arrays.update_model_status(*(b[n] for n in UPDATE_NAMES), b["has_running"])


def reference_step(host: dict, strategy: str) -> None:
    """The same step on the numpy references, replacing the arrays of `host`."""
    h = host
    h["draft_tokens"], h["seq_lens_this_time"] = ref.ngram_match(*(h[n] for n in NGRAM_NAMES), max_ngram_size=3)
    probs = h["table"][np.maximum(h["draft_tokens"].reshape(-1), 0)]
    targets = ids = scores = lens = None
    if strategy == "greedy":
        targets = np.argmax(probs, axis=1).astype(np.int64)
    elif strategy == "target_match":
        targets = ref.sample_tokens(
            probs,
            h["top_p"],
            h["top_k"],
            h["seed"],
            h["step_idx"],
            h["batch_id_per_token_output"],
            h["cu_seqlens_q_output"],
        )
    else:
        ids, scores, lens = ref.top_p_candidates(
            probs, h["top_p"], h["batch_id_per_token_output"], max_candidate_len=K_CAND
        )
    h["accept_tokens"], h["accept_num"] = ref.verify_draft_tokens(
        h["accept_tokens"],
        h["accept_num"],
        h["draft_tokens"],
        targets,
        ids,
        scores,
        lens,
        h["seed"],
        h["step_idx"],
        h["stop_flags"],
        h["is_block_step"],
        h["seq_lens_encoder"],
        h["seq_lens_this_time"],
        h["cu_seqlens_q_output"],
        None,
        h["max_dec_len"],
        h["end_tokens"],
        strategy=strategy,
    )
    outs = ref.update_model_status(*(h[n] for n in UPDATE_NAMES))
    for name, value in zip(UPDATE_OUTPUTS, outs):
        h[name] = value
    h["has_running"] = outs[-1]

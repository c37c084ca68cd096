"""Reference ``process_logits``: the rules of docs/ops/process_logits.md, literally, one row at a time."""

from __future__ import annotations

import numpy as np

from fastspec.reference.sequences import table_sequences

_F32 = np.float32


def row_path(parents: np.ndarray | None, node: int) -> list[int]:
    """The nodes from the root to ``node``, root excluded, root first: a chain's ``1 .. node``, or a tree
    node's ancestors and itself (a parent that is not before its child ends the walk)."""
    if parents is None:
        return list(range(1, node + 1))
    path, i = [], node
    while i > 0:
        path.append(i)
        parent = int(parents[i])
        if parent < 0 or parent >= i:
            break
        i = parent
    return path[::-1]


def penalized_logit(
    x: np.float32, count: int, repetition: np.float32, presence: np.float32, frequency: np.float32
) -> np.float32:
    """A token of the row's history: the repetition penalty, then the presence and frequency penalties
    when it is in the output (``count`` times). Each part is skipped at its neutral value."""
    with np.errstate(all="ignore"):
        if repetition != _F32(1):
            x = x / repetition if x > 0 else x * repetition
        if count > 0 and (presence != 0 or frequency != 0):
            x = (x - frequency * _F32(count)) - presence
    return _F32(x)


def process_logits(
    logits: np.ndarray,
    token_ids_all: np.ndarray,
    prompt_lens: np.ndarray,
    step_idx: np.ndarray,
    draft_tokens: np.ndarray,
    batch_id_per_token_output: np.ndarray,
    cu_seqlens_q_output: np.ndarray,
    repetition_penalty: np.ndarray,
    presence_penalty: np.ndarray,
    frequency_penalty: np.ndarray,
    min_tokens: np.ndarray,
    end_tokens: np.ndarray,
    stop_token_ids: np.ndarray,
    logit_bias_ids: np.ndarray,
    logit_bias_values: np.ndarray,
    bad_words: np.ndarray,
    draft_parents: np.ndarray | None = None,
) -> np.ndarray:
    """Returns a processed copy of ``logits`` (float32 ``[T, V]``)."""
    out = np.array(logits, dtype=np.float32, copy=True)
    rows, vocab = out.shape
    history = np.asarray(token_ids_all)
    batch, max_len = history.shape
    prompt_lens, step_idx, min_tokens = (np.asarray(x).reshape(-1) for x in (prompt_lens, step_idx, min_tokens))
    repetition, presence, frequency = (
        np.asarray(x, dtype=np.float32).reshape(-1) for x in (repetition_penalty, presence_penalty, frequency_penalty)
    )
    batch_id, cu = np.asarray(batch_id_per_token_output).reshape(-1), np.asarray(cu_seqlens_q_output).reshape(-1)
    drafts = np.asarray(draft_tokens)
    cols = drafts.shape[1]
    ends = [int(e) for e in np.asarray(end_tokens).reshape(-1)]

    for t in range(rows):
        b = int(batch_id[t])
        if not 0 <= b < batch:
            continue  # a padding row
        node = min(max(t - int(cu[b]), 0), cols - 1)
        path_tokens = [int(drafts[b, i]) for i in row_path(None if draft_parents is None else draft_parents[b], node)]
        prompt_end = min(max(int(prompt_lens[b]), 0), max_len)
        committed = max(int(step_idx[b]), 0)
        output_end = prompt_end + min(committed, max_len - prompt_end)
        prompt = [int(x) for x in history[b, :prompt_end]]
        output = [int(x) for x in history[b, prompt_end:output_end]] + path_tokens
        row = out[t]

        if repetition[b] != _F32(1) or presence[b] != 0 or frequency[b] != 0:
            counts: dict[int, int] = {}
            for token in prompt:
                counts.setdefault(token, 0)
            for token in output:
                counts[token] = counts.get(token, 0) + 1
            for token, count in counts.items():
                if 0 <= token < vocab:
                    row[token] = penalized_logit(row[token], count, repetition[b], presence[b], frequency[b])

        with np.errstate(all="ignore"):
            for token, value in zip(logit_bias_ids[b], logit_bias_values[b]):
                if 0 <= token < vocab:
                    row[token] = row[token] + _F32(value)

        for sequence in table_sequences(bad_words[b]):
            if not 0 <= sequence[-1] < vocab:
                continue
            prefix = sequence[:-1]
            if len(prefix) <= len(output) and (not prefix or output[len(output) - len(prefix) :] == prefix):
                row[sequence[-1]] = -np.inf

        tokens_out = committed + len(path_tokens)
        if tokens_out < int(min_tokens[b]):
            for token in ends + [int(s) for s in stop_token_ids[b]]:
                if 0 <= token < vocab:
                    row[token] = -np.inf
    return out

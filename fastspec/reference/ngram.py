"""Reference ``ngram_match`` and ``ngram_append``: the rules of docs/ops/ngram_match.md and ngram_append.md, literally, one slot at a time."""

from __future__ import annotations

from typing import Callable

import numpy as np


def _leftmost(region: np.ndarray, query: np.ndarray, limit: int) -> int:
    """Leftmost i with region[i:i+n] == query and i + n < limit, or -1."""
    n = len(query)
    if len(region) < n:
        return -1
    windows = np.lib.stride_tricks.sliding_window_view(region, n)
    hits = np.flatnonzero((windows == query).all(axis=1))
    hits = hits[hits + n < limit]
    return int(hits[0]) if len(hits) else -1


def _find_drafts(prompt: np.ndarray, generated: np.ndarray, md: int, max_n: int, min_n: int) -> tuple[np.ndarray, int]:
    """The search's drafts, and where they start: the prompt index, or p + the generated index."""
    s, p = len(generated), len(prompt)
    for n in range(max_n, min_n - 1, -1):
        if n > s:
            continue
        query = generated[s - n :]
        i = _leftmost(prompt, query, p)
        if i >= 0:
            return prompt[i + n : min(i + n + md, p)], i + n
        i = _leftmost(generated, query, s)
        if i >= 0:
            return generated[i + n : min(i + n + md, s)], p + i + n
    return generated[:0], -1


def _continuation(row: np.ndarray, p: int, s: int, k: int, anchor: int) -> tuple[int, int] | None:
    """The anchored rule (docs/ops/ngram_match.md): where the source at `anchor` continues after the
    tokens generated since, and the end of its region; None when it does not agree or has nothing left."""
    known = p + s
    if not 0 <= anchor < known:
        return None
    end = p if anchor < p else known
    for m in range(min(k + 1, s), 0, -1):
        if anchor + m < end and np.array_equal(row[anchor : anchor + m], row[known - m : known]):
            return anchor + m, end
    return None


def _run(
    token_ids_all: np.ndarray,
    prompt_lens: np.ndarray,
    step_idx: np.ndarray,
    draft_token_num: np.ndarray,
    draft_tokens: np.ndarray,
    seq_lens_this_time: np.ndarray,
    seq_lens_encoder: np.ndarray,
    seq_lens_decoder: np.ndarray,
    max_dec_len: np.ndarray,
    *,
    token_budget: int,
    ngram_anchor: np.ndarray | None,
    decode_drafts: Callable[[np.ndarray, int, int, int | None, np.ndarray, int], tuple[np.ndarray, int]],
) -> tuple[np.ndarray, ...]:
    """What both n-gram ops share: slot kinds, the write rule and the budget.

    ``decode_drafts(row, p, s, md, model_drafts, anchor)`` gives a decode slot's drafts and its new
    anchor; ``md`` is None when the slot's geometry is invalid (``p < 0``, ``s < 0`` or
    ``p + s > L``), ``model_drafts`` are the drafts already in
    ``draft_tokens[b, 1 .. seq_lens_this_time - 1]`` and ``anchor`` is ``ngram_anchor[b]`` (-1
    without anchors). Returns updated copies of ``(draft_tokens, seq_lens_this_time)``, and of
    ``ngram_anchor`` when one was given (every slot but a drafting decode slot's gets -1); inputs
    are not modified.
    """
    anchors = None if ngram_anchor is None else np.array(ngram_anchor, dtype=np.int64, copy=True).reshape(-1)
    draft_tokens = np.array(draft_tokens, dtype=np.int64, copy=True)
    seq_lens_this_time = np.array(seq_lens_this_time, dtype=np.int32, copy=True)
    drafts_out, lens_out = draft_tokens.reshape(draft_tokens.shape[0], -1), seq_lens_this_time.reshape(-1)
    flat = [
        np.asarray(x).reshape(-1)
        for x in (prompt_lens, step_idx, draft_token_num, seq_lens_encoder, seq_lens_decoder, max_dec_len)
    ]
    prompt_lens, step_idx, draft_token_num, enc, dec, max_dec_len = flat
    batch, max_len = token_ids_all.shape
    k = drafts_out.shape[1] - 1

    decode = (enc == 0) & (dec > 0)
    running = (enc > 0) | decode
    for b in range(batch):
        anchor = -1 if anchors is None else int(anchors[b])
        if anchors is not None:
            anchors[b] = -1  # prefill and inactive slots start afresh
        if enc[b] > 0:
            continue
        if not decode[b]:
            lens_out[b] = 0
            drafts_out[b, 1:] = -1
            continue
        p, s = int(prompt_lens[b]), int(step_idx[b])
        md = (
            min(int(draft_token_num[b]), k, int(max_dec_len[b]) - s - 1)
            if p >= 0 and s >= 0 and p + s <= max_len
            else None
        )
        model_drafts = drafts_out[b, 1 : 1 + min(max(int(lens_out[b]) - 1, 0), k)].copy()
        drafts, new_anchor = decode_drafts(token_ids_all[b], p, s, md, model_drafts, anchor)
        if anchors is not None:
            anchors[b] = new_anchor
        drafts_out[b, 1:] = -1
        drafts_out[b, 1 : 1 + len(drafts)] = drafts
        lens_out[b] = 1 + len(drafts)

    if token_budget > 0:
        order = np.flatnonzero(running)
        used = 0
        for rank, b in enumerate(order):
            if decode[b]:
                reserve = len(order) - rank - 1
                keep = min(int(lens_out[b]) - 1, max(0, token_budget - used - reserve - 1))
                drafts_out[b, 1 + keep :] = -1
                lens_out[b] = 1 + keep
            used += int(lens_out[b])
    if anchors is None:
        return draft_tokens, seq_lens_this_time
    return draft_tokens, seq_lens_this_time, anchors.reshape(np.shape(ngram_anchor))


def ngram_match(
    *arrays: np.ndarray,
    max_ngram_size: int,
    min_ngram_size: int = 1,
    token_budget: int = 0,
    ngram_anchor: np.ndarray | None = None,
) -> tuple[np.ndarray, ...]:
    """``ngram_match`` (docs/ops/ngram_match.md) on numpy arrays given in the documented order; returns updated copies (and the
    updated ``ngram_anchor`` when one is given: anchored drafting, docs/ops/ngram_match.md)."""

    def decode_drafts(row, p, s, md, model_drafts, anchor):
        if md is None or md <= 0:
            return row[:0], -1
        found = _continuation(row, p, s, cols - 1, anchor)
        if found is not None:
            start, end = found
            return row[start : min(start + md, end)], start
        drafts, start = _find_drafts(row[:p], row[p : p + s], md, max_ngram_size, min_ngram_size)
        return drafts, start if len(drafts) else -1

    cols = np.asarray(arrays[4]).shape[-1]
    return _run(*arrays, token_budget=token_budget, ngram_anchor=ngram_anchor, decode_drafts=decode_drafts)


def ngram_append(
    *arrays: np.ndarray,
    max_ngram_size: int,
    min_ngram_size: int = 1,
    token_budget: int = 0,
    ngram_anchor: np.ndarray | None = None,
) -> tuple[np.ndarray, ...]:
    """Hybrid drafting (docs/ops/ngram_append.md): keeps a decode slot's model drafts
    ``draft_tokens[b, 1..m]`` (``m = seq_lens_this_time[b] - 1``, cut to ``md``) and appends the
    n-gram continuation of the generated tokens extended by them. Returns updated copies (and the
    updated ``ngram_anchor`` when one is given)."""

    def decode_drafts(row, p, s, md, model_drafts, anchor):
        if md is None:  # invalid geometry: the model's drafts stay, nothing is appended
            return model_drafts, -1
        model_drafts = model_drafts[: max(md, 0)]
        kept, room = len(model_drafts), md - len(model_drafts)
        if room <= 0:
            return model_drafts, -1
        found = _continuation(row, p, s, cols - 1, anchor)
        if found is not None:  # the source continues: it must also agree with the model's drafts
            start, end = found
            if start + kept < end and np.array_equal(row[start : start + kept], model_drafts):
                appended = row[start + kept : min(start + kept + room, end)]
                return np.concatenate([model_drafts, appended]), start
        extended = np.concatenate([row[p : p + s], model_drafts])
        appended, start = _find_drafts(row[:p], extended, room, max_ngram_size, min_ngram_size)
        new_anchor = start - kept if len(appended) and start - kept >= 0 else -1
        return np.concatenate([model_drafts, appended]), new_anchor

    cols = np.asarray(arrays[4]).shape[-1]
    return _run(*arrays, token_budget=token_budget, ngram_anchor=ngram_anchor, decode_drafts=decode_drafts)

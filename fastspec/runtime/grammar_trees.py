"""Draft trees under a grammar (docs/structured_output.md): a node whose token its grammar forbids after the
path to it is cut with its subtree, and every kept node's row gets the mask of the grammar after that path.

A matcher is advanced along a node's path, asked, and rolled back: it ends each call where it started.
"""

from __future__ import annotations

import numpy as np


def path_tokens(tokens, parents, node: int) -> list[int]:
    """The tokens from the root's first child down to ``node`` (node 0, the committed token, excluded)."""
    path = []
    while node > 0:
        path.append(int(tokens[node]))
        node = int(parents[node])
    return path[::-1]


def prune_tree(matcher, tokens, parents, count: int) -> list[int]:
    """The nodes of a ``count``-node tree (parents before children) whose paths the grammar allows, in order."""
    kept = np.zeros(count, dtype=bool)
    kept[0] = True
    for node in range(1, count):
        parent = int(parents[node])
        if not 0 <= parent < node or not kept[parent]:
            continue
        path = path_tokens(tokens, parents, parent)
        if path and not matcher.consume_tokens(path):
            raise RuntimeError("grammar: a kept path no longer matches")  # pragma: no cover (kept paths match)
        kept[node] = matcher.validate_tokens([int(tokens[node])]) == 1
        if path:
            matcher.rollback(len(path))
    return [int(i) for i in np.flatnonzero(kept)]


def compact_tree(tokens, parents, depths, keep: list[int], width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The kept nodes renumbered in order (parents remapped), then -1 up to ``width``."""
    new_index = {old: new for new, old in enumerate(keep)}
    t = np.full(width, -1, np.int64)
    p = np.full(width, -1, np.int64)
    d = np.full(width, -1, np.int64)
    for new, old in enumerate(keep):
        t[new] = tokens[old]
        p[new] = new_index[int(parents[old])] if new else -1
        d[new] = depths[old]
    return t, p, d


def tree_masks(matcher, tokens, parents, count: int, fill_row) -> None:
    """``fill_row(matcher, j)``: the mask of the grammar after node ``j``'s path, for every node of the tree."""
    for node in range(count):
        path = path_tokens(tokens, parents, node)
        if path and not matcher.consume_tokens(path):
            raise RuntimeError("grammar: a kept path no longer matches")  # pragma: no cover
        fill_row(matcher, node)
        if path:
            matcher.rollback(len(path))

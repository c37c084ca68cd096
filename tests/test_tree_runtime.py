"""The runner's helpers for a draft tree: the ancestor mask and the positions, checked against the tree's
paths walked one parent at a time (docs/trees.md's worked example, then random trees)."""

from __future__ import annotations

import numpy as np

from fastspec.runtime.trees import tree_attention_mask, tree_positions
from tests.tree_cases import random_tree


def test_the_worked_example():
    parents = np.array([[-1, 0, 1, 0, 1]], np.int32)
    mask = tree_attention_mask(parents, np.array([5]))
    assert sorted(np.flatnonzero(mask[0, 2])) == [0, 1, 2]  # token 7 sees 4, 5 and itself
    assert sorted(np.flatnonzero(mask[0, 3])) == [0, 3]  # token 6 sees 4 and itself
    depths = np.array([[0, 1, 2, 1, 2]], np.int32)
    np.testing.assert_array_equal(tree_positions(depths, np.array([9])), [[9, 10, 11, 10, 11]])


def test_random_trees_see_exactly_their_paths():
    rng = np.random.default_rng(24)
    for _ in range(30):
        n, nodes = 12, int(rng.integers(1, 13))
        parents = np.full((1, n), -1, np.int32)
        _, parents[0, :nodes] = random_tree(rng, nodes, int(rng.integers(1, 5)), 4)
        mask = tree_attention_mask(parents, np.array([nodes]))
        for i in range(n):
            path, node = set(), i
            while i < nodes and node >= 0:
                path.add(node)
                node = int(parents[0, node]) if node > 0 else -1
            assert set(np.flatnonzero(mask[0, i])) == path

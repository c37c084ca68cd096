"""The runner's helpers for a draft tree: the ancestor mask, the positions and their view on a model's grid,
checked against the tree's paths walked one parent at a time (docs/trees.md's worked example, then random
trees)."""

from __future__ import annotations

import numpy as np

from fastspec.runtime.trees import TreeInputs, tree_attention_mask, tree_positions
from tests.helpers.tree_cases import random_tree


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


def test_the_grid_view_puts_each_node_at_its_column_with_its_own_attention():
    """TreeInputs on a [B, L] grid: committed columns stay causal; node i (column start + i) sees the committed
    tokens and its ancestors only, at position decoder + depth."""
    rng = np.random.default_rng(25)
    length = 20
    for _ in range(20):
        nodes = int(rng.integers(1, 8))
        parents = np.full((2, 8), -1, np.int32)
        _, parents[0, :nodes] = random_tree(rng, nodes, 3, 4)
        depths = np.full((2, 8), -1, np.int32)
        for i in range(nodes):
            depths[0, i] = depths[0, parents[0, i]] + 1 if i else 0
        start = int(rng.integers(0, length - nodes + 1))
        counts = np.array([nodes, 0])
        tree = TreeInputs(
            start=np.array([start, -1]),
            nodes=counts,
            mask=tree_attention_mask(parents, counts),
            positions=tree_positions(depths, np.array([start, 0])),
            row_col=np.zeros(0, np.int64),
        )
        grid, positions = tree.grid_mask(length), tree.grid_positions(length)
        assert (grid[1] == np.tril(np.ones((length, length), bool))).all() and (positions[1] == np.arange(length)).all()
        for i in range(nodes):
            ancestors, node = set(), i
            while node >= 0:
                ancestors.add(start + node)
                node = int(parents[0, node]) if node > 0 else -1
            assert set(np.flatnonzero(grid[0, start + i])) == set(range(start)) | ancestors
            assert positions[0, start + i] == start + depths[0, i]

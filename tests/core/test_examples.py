"""Every op's example call (fastspec.core.examples) is a call the checks accept, at any batch."""

from __future__ import annotations

import numpy as np
import pytest

from fastspec.core.examples import example_call, ops_with_examples
from fastspec.core.schema import SCHEMAS
from fastspec.core.validate import TensorMeta, validate


def test_every_op_has_an_example():
    assert set(ops_with_examples()) == set(SCHEMAS)


@pytest.mark.parametrize("batch, seed", [(2, None), (1, None), (5, None), (7, 3), (64, 11)])
@pytest.mark.parametrize("op_name", list(SCHEMAS))
def test_an_example_of_any_batch_passes_the_checks(op_name, batch, seed):
    op = SCHEMAS[op_name]
    arrays, attrs = example_call(op_name, batch, seed=seed)
    metas = {name: TensorMeta(str(a.dtype), a.shape) for name, a in arrays.items()}
    checked = validate(op, metas, attrs)
    assert checked.dims.get("B", checked.dims.get("T")) == batch  # an op over rows alone: a row is a slot


def test_slots_keep_their_rows():
    """A slot copied from the written call brings its rows: slot j's rows are the written slot's."""
    base, _ = example_call("verify_draft_tree")
    arrays, _ = example_call("verify_draft_tree", 6, seed=5)
    cu, base_cu = arrays["cu_seqlens_q_output"], base["cu_seqlens_q_output"]
    for j in range(6):
        rows = arrays["target_tokens"][cu[j] : cu[j + 1]]
        assert any(
            np.array_equal(rows, base["target_tokens"][base_cu[b] : base_cu[b + 1]])
            and np.array_equal(arrays["draft_tree_parents"][j], base["draft_tree_parents"][b])
            for b in range(2)
        )


def test_every_call_gets_fresh_arrays():
    first, _ = example_call("ngram_match")
    first["draft_tokens"][:] = 99
    second, _ = example_call("ngram_match")
    assert (second["draft_tokens"] == -1).all()

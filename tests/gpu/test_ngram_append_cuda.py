"""ngram_append on CUDA: bit-exact against the reference, eagerly and replayed from a CUDA Graph.

On the CUDA emulator without a GPU: everything but the graph replay (`needs_gpu`), with a few
random cases per chunk."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from tests.helpers import ngram_harness as harness  # noqa: E402
from tests.helpers.cuda import check_ngram_random_batches, check_ngram_replays, run_ngram_cuda  # noqa: E402
from tests.helpers.ngram_append_cases import hybrid_example, random_append_case  # noqa: E402

run_cuda = partial(run_ngram_cuda, "ngram_append")
reference = partial(harness.run_reference, "ngram_append")


def test_spec_example():
    arrays, attrs = hybrid_example()
    drafts, lens = run_cuda(arrays, attrs)
    assert drafts.tolist() == [[20, 30, 40, 50, -1]] and lens.tolist() == [4]


@pytest.mark.parametrize("chunk", range(4))
def test_random_batches_match_the_reference(chunk):
    check_ngram_random_batches("ngram_append", 2000 + chunk)  # the same cases as the CPU tests


@pytest.mark.parametrize("batch, max_model_len", [(1, 65536), (64, 4096), (4096, 64)])
def test_large_shapes_match_the_reference(batch, max_model_len):
    rng = np.random.default_rng(batch)
    arrays, attrs = random_append_case(rng, batch=batch, max_model_len=max_model_len)
    harness.assert_same(run_cuda(arrays, attrs), reference(arrays, attrs))


@pytest.mark.needs_gpu
def test_graph_replay_with_changed_inputs():
    # same shapes, new contents: the replay must read them from the captured buffers
    check_ngram_replays("ngram_append", random_append_case, seed=43)

"""top_k_top_p_probs on the emulated XPU: bit-exact against the reference for every row kind, dtype and
vocabulary size, on every grid, clusters forward and reversed."""

from __future__ import annotations

import numpy as np
import pytest

from fastspec import arrays as kernels
from fastspec import reference as ref
from tests.helpers.sampling_cases import make_batch, make_probs, probs_case
from tests.xpu.launches import LAUNCHES, describe, launch
from tests.xpu.test_sampling_xpu import in_dtype


def xpu_probs(probs, top_p, top_k, batch_id, options):
    out = np.full(probs.shape, 5.0, np.float32)  # garbage: every element must be written
    kernels.top_k_top_p_probs(probs, top_p, top_k, batch_id, out, **options)
    return out


def assert_bits(got, want, context=""):
    differ = np.argwhere(got.view(np.uint32) != want.view(np.uint32))
    assert len(differ) == 0, f"{len(differ)} entries differ, first {differ[:4].tolist()} {context}"


@pytest.mark.parametrize("options", LAUNCHES, ids=describe)
def test_small_rows(options):
    probs = np.array([[0.125, 0.375, 0.125, 0.125, 0.125, 0.125], [np.nan, 0, 0, 0, 0, 0],
                      [0.125, 0.375, 0.125, 0.125, 0.125, 0.125]], np.float32)
    top_p, top_k = np.array([1.0, 0.3], np.float32), np.array([2, 0], np.int32)
    batch_id = np.array([0, 1, -1], np.int32)
    got = xpu_probs(probs, top_p, top_k, batch_id, options)
    assert got[0].tolist() == [0.25, 0.75, 0.0, 0.0, 0.0, 0.0] and (got[1:] == 0).all()
    assert_bits(got, ref.top_k_top_p_probs(probs, top_p, top_k, batch_id))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("vocab", [1, 7, 300, 4096])
def test_matches_the_reference(dtype, vocab):
    probs, top_p, top_k, batch_id = probs_case(np.random.default_rng(vocab + 13), vocab)
    probs = in_dtype(probs, dtype)
    options = launch(vocab + len(dtype))
    assert_bits(xpu_probs(probs, top_p, top_k, batch_id, options), ref.top_k_top_p_probs(probs, top_p, top_k, batch_id),
                describe(options))


def test_large_vocabulary_matches_the_reference():
    rng = np.random.default_rng(5)
    _, batch_id = make_batch(rng, [2, 1, 2], padding_rows=1)
    probs = make_probs(rng, 151936, len(batch_id), kinds=("peaked", "uniform", "ties", "special", "zeros"))
    top_p, top_k = np.array([0.9, 0.5, 1.0], np.float32), np.array([0, 50, 1000], np.int32)
    want = ref.top_k_top_p_probs(probs, top_p, top_k, batch_id)
    assert_bits(xpu_probs(probs, top_p, top_k, batch_id, launch(2)), want)


def test_many_rows_equal_the_cpu_kernel():
    """Rows strided over the clusters: the XPU kernel against the CPU kernel (tested against the reference)."""
    rng = np.random.default_rng(99)
    probs, top_p, top_k, batch_id = probs_case(rng, 2048, [int(x) for x in rng.integers(1, 5, 40)], padding_rows=5)
    cpu = xpu_probs(probs, top_p, top_k, batch_id, {})
    for options in (LAUNCHES[4], LAUNCHES[5]):  # 12 clusters, forward and reversed
        assert_bits(xpu_probs(probs, top_p, top_k, batch_id, options), cpu, describe(options))

"""Anchored n-gram drafting on CUDA: both ops with ngram_anchor against the reference, eagerly and
replayed from a captured CUDA Graph whose anchors live in a device tensor.

On the CUDA emulator without a GPU: the random batches (a few cases); the graph replay needs a GPU."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")  # the whole module needs PyTorch

import fastspec.arrays  # noqa: E402
from fastspec import reference as ref  # noqa: E402
from tests.helpers.cuda import capture, copy_into, shaped_like, target, to_device, to_host  # noqa: E402
from tests.helpers.ngram_append_cases import random_append_case  # noqa: E402
from tests.helpers.ngram_cases import ARRAY_NAMES, random_anchors, random_case  # noqa: E402

CASES = {"ngram_match": random_case, "ngram_append": random_append_case}


def assert_same(got, expected, context=""):
    for name, g, e in zip(("draft_tokens", "seq_lens_this_time", "ngram_anchor"), got, expected):
        np.testing.assert_array_equal(g, e, err_msg=f"{name} {context}")


@pytest.mark.parametrize("op", sorted(CASES))
def test_random_batches_with_anchors_match_the_reference(op):
    rng = np.random.default_rng(15 + len(op))  # the CPU tests' cases
    for case in range(target.cases(300)):
        arrays, attrs = CASES[op](rng)
        anchors = random_anchors(rng, arrays)
        expected = getattr(ref, op)(*(arrays[name] for name in ARRAY_NAMES), **attrs, ngram_anchor=anchors)
        tensors = to_device({**arrays, "ngram_anchor": anchors})
        getattr(fastspec.arrays, op)(
            *(tensors[name] for name in ARRAY_NAMES), **attrs, ngram_anchor=tensors["ngram_anchor"], **target.kw
        )
        target.synchronize()
        out = to_host(tensors)
        assert_same((out["draft_tokens"], out["seq_lens_this_time"], out["ngram_anchor"]), expected, f"case {case}")


@pytest.mark.needs_gpu
def test_graph_replay_reads_and_writes_the_anchor_tensor():
    rng = np.random.default_rng(4)
    first, attrs = CASES["ngram_match"](rng, batch=16, max_model_len=256)
    tensors = to_device({**first, "ngram_anchor": random_anchors(rng, first)})
    graph = capture(
        lambda: fastspec.arrays.ngram_match(
            *(tensors[name] for name in ARRAY_NAMES), **attrs, ngram_anchor=tensors["ngram_anchor"]
        )
    )
    for step in range(5):
        arrays, _ = CASES["ngram_match"](rng, batch=16, max_model_len=256)
        arrays = shaped_like(arrays, first)
        anchors = random_anchors(rng, arrays)
        copy_into(tensors, {**arrays, "ngram_anchor": anchors})
        graph.replay()
        torch.cuda.synchronize()
        out = to_host(tensors)
        expected = ref.ngram_match(*(arrays[name] for name in ARRAY_NAMES), **attrs, ngram_anchor=anchors)
        assert_same((out["draft_tokens"], out["seq_lens_this_time"], out["ngram_anchor"]), expected, f"replay {step}")

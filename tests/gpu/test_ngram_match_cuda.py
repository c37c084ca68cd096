"""ngram_match on CUDA: bit-exact against the reference, eagerly and replayed from a CUDA Graph.

On the CUDA emulator without a GPU: everything but the graph replay and the raw-pointer rand64 call
(`needs_gpu`), with a few random cases per chunk."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

torch = pytest.importorskip("torch")  # the whole module needs PyTorch

import fastspec.arrays  # noqa: E402
from fastspec import reference as ref  # noqa: E402
from tests.helpers import ngram_harness as harness  # noqa: E402
from tests.helpers.cuda import check_ngram_random_batches, check_ngram_replays, run_ngram_cuda  # noqa: E402
from tests.helpers.ngram_cases import random_case, spec_example  # noqa: E402

run_cuda = partial(run_ngram_cuda, "ngram_match")
reference = partial(harness.run_reference, "ngram_match")


def test_spec_example():
    arrays, attrs = spec_example()
    drafts, lens = run_cuda(arrays, attrs)
    assert drafts.tolist() == [[40, 50, 60, -1]] and lens.tolist() == [3]


@pytest.mark.parametrize("chunk", range(6))
def test_random_batches_match_the_reference(chunk):
    check_ngram_random_batches("ngram_match", 1000 + chunk)  # the same cases as the CPU tests


@pytest.mark.parametrize("batch, max_model_len", [(1, 131072), (64, 8192), (300, 512), (4096, 64)])
def test_large_shapes_match_the_reference(batch, max_model_len):
    rng = np.random.default_rng(batch)
    arrays, attrs = random_case(rng, batch=batch, max_model_len=max_model_len)
    harness.assert_same(run_cuda(arrays, attrs), reference(arrays, attrs))


def test_batch_above_the_cuda_limit_is_an_error():
    arrays, attrs = random_case(np.random.default_rng(0), batch=4097, max_model_len=8)
    with pytest.raises(ValueError, match="batch"):
        run_cuda(arrays, attrs)


@pytest.mark.needs_gpu
def test_graph_replay_with_changed_inputs():
    # same shapes, new contents: the replay must read them from the captured buffers
    check_ngram_replays("ngram_match", random_case, seed=42)


@pytest.mark.needs_gpu
def test_rand64_known_answers_on_the_device():
    seeds = torch.tensor([0, 0, 2**32, -1], dtype=torch.int64, device="cuda")
    positions = torch.tensor([0, 2**32, 0, -1], dtype=torch.int64, device="cuda")
    out = torch.zeros(4, dtype=torch.int64, device="cuda")
    fastspec.arrays.module().rand64_cuda(
        seeds.data_ptr(),
        positions.data_ptr(),
        ref.STREAM_TARGET,
        out.data_ptr(),
        4,
        torch.cuda.current_stream().cuda_stream,
    )
    got = [int(v) & (2**64 - 1) for v in out.cpu().tolist()]
    assert got == [0xF08D6EAA844515E1, 0x5BBD079A79D48E11, 0x114B24477F6C13FF, 0x340725878BCD8398]

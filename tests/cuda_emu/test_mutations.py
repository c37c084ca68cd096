"""Mutation tests: the emulator tests must notice a broken kernel. Every barrier written in the
n-gram, sampling and update kernels is removed in turn (the emulation skips it: the kernel as if
that __syncthreads were deleted), and one block's writes are dropped (the block never runs); each
mutant must fail a small workload of the op (a broken rule reported, or results that differ from
the reference)."""

from __future__ import annotations

import contextlib
import re

import numpy as np
import pytest

import fastspec.arrays
from fastspec import reference as ref
from tests.helpers.emulated_calls import candidates, renormalised, sample, update
from tests.helpers.ngram_append_cases import random_append_case
from tests.helpers.ngram_cases import ARRAY_NAMES, random_anchors, random_case
from tests.helpers.paths import ROOT
from tests.helpers.sampling_cases import make_batch, make_probs, min_p_values, probs_case, request_params
from tests.helpers.verify_update_cases import UPDATE_NAMES, random_update_case

CUDA_SOURCES = ROOT / "custom_ops" / "cuda"
OPTIONS = {"backend": "cuda_emulator"}


def sites_in(source: str) -> list[tuple[str, int]]:
    """(file, line) of every barrier written in custom_ops/cuda/<source>."""
    lines = (CUDA_SOURCES / source).read_text().splitlines()
    return [(source, n) for n, text in enumerate(lines, 1) if re.search(r"\b__syncthreads(_or|_and|_count)?\(", text)]


@contextlib.contextmanager
def mutated(file: str = "", line: int = 0, skip_block: int = -1):
    fastspec.arrays.module().cuda_emulator_mutate(f"/{file}" if file else "", line, skip_block)
    try:
        yield
    finally:
        fastspec.arrays.module().cuda_emulator_mutate()


def ngram_workload(op: str) -> bool:
    """True when the op equals the reference on a few random batches (budgets and anchors included)."""
    rng = np.random.default_rng(7)
    make = random_case if op == "ngram_match" else random_append_case
    for case in range(12):
        arrays, attrs = make(rng)
        if case % 3 == 1:
            attrs["token_budget"] = int(arrays["token_ids_all"].shape[0] * 2)
        anchors = random_anchors(rng, arrays) if case % 3 == 2 else None
        want = getattr(ref, op)(*(arrays[n] for n in ARRAY_NAMES), **attrs, ngram_anchor=anchors)
        copies = {name: arrays[name].copy() for name in ARRAY_NAMES}
        anchor = None if anchors is None else anchors.copy()
        got = getattr(fastspec.arrays, op)(*(copies[n] for n in ARRAY_NAMES), **attrs, ngram_anchor=anchor, **OPTIONS)
        got = (*got, anchor) if anchor is not None else got
        if not all(np.array_equal(g, w) for g, w in zip(got, want)):
            return False
    return True


def sampling_workload() -> bool:
    rng = np.random.default_rng(11)
    vocab = 300
    cu, batch_id = make_batch(rng, [2, 1, 3], padding_rows=1)
    probs = make_probs(rng, vocab, len(batch_id))
    args = (*request_params(rng, 3, vocab), batch_id, cu)
    top_p, top_k = args[0], args[1]
    checks = []
    for min_p in (None, np.array([0.3, 0.05, 0.6], np.float32), min_p_values(rng, 3)):
        got_candidates = candidates(probs, top_p, batch_id, 40, OPTIONS, min_p)
        want_candidates = ref.top_p_candidates(probs, top_p, batch_id, min_p, max_candidate_len=40)
        checks += [
            all(np.array_equal(g, w) for g, w in zip(got_candidates, want_candidates)),
            np.array_equal(sample(probs, args, OPTIONS, min_p=min_p), ref.sample_tokens(probs, *args, min_p)),
            np.array_equal(
                renormalised(probs, top_p, top_k, batch_id, OPTIONS, min_p).view(np.uint32),
                ref.top_k_top_p_probs(probs, top_p, top_k, batch_id, min_p).view(np.uint32),
            ),
        ]
    return all(checks)


def update_workload() -> bool:
    rng = np.random.default_rng(5)
    for _ in range(20):
        arrays = random_update_case(rng, batch=int(rng.integers(33, 200)))
        want = ref.update_model_status(*(arrays[name] for name in UPDATE_NAMES))
        if not all(np.array_equal(g, w) for g, w in zip(update(arrays, OPTIONS), want)):
            return False
    return True


WORKLOADS = {
    "ngram_match.cu": lambda: ngram_workload("ngram_match"),
    "ngram_append.cu": lambda: ngram_workload("ngram_append"),
    "sampling.cu": sampling_workload,
    "update_model_status.cu": update_workload,
}


def survives(workload) -> bool:
    try:
        return workload()
    except RuntimeError as error:
        assert "CUDA emulation" in str(error)
        return False


@pytest.mark.parametrize("source", sorted(WORKLOADS))
def test_the_unmutated_kernels_pass_the_workloads(source):
    assert WORKLOADS[source]()


# Barriers whose removal changes nothing the kernels do today (equivalent mutants), named by the
# code written just before them, with the reason.
REDUNDANT = {
    "ngram_match.cu": {
        "if (__syncthreads_or(full)) return;\n  }": "scan_region's last barrier: the loop's last __syncthreads_or already follows every atomicMin",
    },
    "sampling.cu": {
        "*mass = s.above_mass;": "row_totals' last barrier: every caller passes other barriers before the next "
        "write of above_w / above_mass",
        "if (threadIdx.x == 0) s.token = -1;": "the draw loop's BlockScan has barriers of its own before "
        "any thread writes s.token",
    },
}


def redundant_sites(source: str) -> set[tuple[str, int]]:
    lines = (CUDA_SOURCES / source).read_text().splitlines()
    before = lambda line: "\n".join(lines[line - 3 : line - 1])  # noqa: E731 (the two lines above a barrier)
    return {
        (source, line)
        for source, line in sites_in(source)
        if any(code in before(line) for code in REDUNDANT.get(source, {}))
    }


@pytest.mark.parametrize("source", sorted(WORKLOADS))
def test_removing_any_barrier_fails_the_workload(source):
    sites = sites_in(source)
    assert sites
    survivors = set()
    for site in sites:
        with mutated(*site):
            if survives(WORKLOADS[source]):
                survivors.add(site)
    assert survivors == redundant_sites(source), f"removing these barriers went unnoticed: {survivors}"
    assert len(survivors) == len(REDUNDANT.get(source, {}))


def test_dropping_one_rows_writes_fails_the_workload():
    assert survives(sampling_workload)
    with mutated(skip_block=2):
        assert not survives(sampling_workload)
    rng = np.random.default_rng(3)
    probs, top_p, top_k, batch_id = probs_case(rng, 64)
    with mutated(skip_block=0):
        got = renormalised(probs, top_p, top_k, batch_id, OPTIONS)
    assert (got[0] == 5.0).all()  # the first row kept the garbage the helper filled it with

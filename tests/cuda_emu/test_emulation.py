"""The CUDA emulation catches what it claims to: one probe kernel per rule
(custom_ops/cuda/emulation/probes.cu) fails its launch naming the rule, the block and the thread;
the legal probes compute the right values in every block order."""

from __future__ import annotations

import numpy as np
import pytest

import fastspec.arrays

(
    CLEAN,
    DIVERGENT_BARRIER,
    UNINITIALISED_SHARED,
    READ_WRITE_RACE,
    WRITE_WRITE_RACE,
    OUT_OF_BOUNDS_WRITE,
    OUT_OF_BOUNDS_READ,
    TOO_MANY_THREADS,
    TOO_MUCH_DYNAMIC_SHARED,
    TOO_MUCH_STATIC_SHARED,
    WARP_DIVERGENCE,
    EARLY_EXIT,
    DYNAMIC_SHARED,
) = range(13)
OK, LAUNCH_FAILURE = 0, 719  # cudaSuccess, cudaErrorLaunchFailure
THREADS, BLOCKS, OUT_PER_THREAD = 64, 2, 5
VALUES = list(range(1, 33))
ORDERS = {"forward": (0, 0), "reverse": (1, 0), "shuffle": (2, 7)}


def probe(which: int, order: str = "forward", n_out: int = BLOCKS * THREADS * OUT_PER_THREAD):
    block_order, seed = ORDERS[order]
    status, error, out = fastspec.arrays.module().cuda_probe(which, VALUES, n_out, block_order, seed)
    return status, error, np.array(out)


@pytest.mark.parametrize("order", sorted(ORDERS))
def test_a_clean_kernel_computes_what_cuda_would(order):
    status, error, out = probe(CLEAN, order)
    assert (status, error) == (OK, "")
    v = np.array([VALUES[t % len(VALUES)] for t in range(THREADS)])
    out = out.reshape(BLOCKS, THREADS, OUT_PER_THREAD)
    for block in out:
        np.testing.assert_array_equal(block[:, 0], np.roll(v, -1))  # a neighbour's value, after a barrier
        assert (block[:, 1] == (v % 2).sum()).all()  # __syncthreads_count
        np.testing.assert_array_equal(block[:, 2], np.cumsum(v) - v)  # BlockScan exclusive sum
        np.testing.assert_array_equal(block[:, 3], np.repeat([v[:32].sum(), v[32:].sum()], 32))  # __reduce_add_sync
        expected_last = v.sum() + 1  # the atomic total, plus __syncthreads_or(v > 30)
        np.testing.assert_array_equal(block[1:, 4], expected_last)
        assert block[0, 4] == expected_last + v.sum()  # BlockReduce's sum, in thread 0


@pytest.mark.parametrize("order", sorted(ORDERS))
def test_legal_early_exit_and_dynamic_shared_memory(order):
    status, error, out = probe(EARLY_EXIT, order, THREADS)
    assert (status, error) == (OK, "")
    np.testing.assert_array_equal(out[:32], VALUES[0] + np.arange(31, -1, -1))  # threads 32.. returned early
    status, error, out = probe(DYNAMIC_SHARED, order, THREADS)
    assert (status, error) == (OK, "")
    np.testing.assert_array_equal(out, [VALUES[(THREADS - 1 - t) % len(VALUES)] for t in range(THREADS)])


def assert_fails(which: int, *fragments: str, order: str = "forward", n_out: int = THREADS) -> str:
    status, error, _ = probe(which, order, n_out)
    assert status == LAUNCH_FAILURE, error
    for fragment in fragments:
        assert fragment in error, error
    return error


@pytest.mark.parametrize("order", sorted(ORDERS))
def test_barrier_divergence(order):
    error = assert_fails(
        DIVERGENT_BARRIER, "barrier divergence", "probes.cu:", "(block (0, 0, 0), thread (", order=order
    )
    assert error.count("probes.cu:") == 2  # both barriers named


def test_uninitialised_shared_read():
    assert_fails(
        UNINITIALISED_SHARED,
        "uninitialised shared read",
        "no thread of this block wrote",
        "(block (0, 0, 0), thread (1, 0, 0))",
    )


@pytest.mark.parametrize("order", sorted(ORDERS))
def test_shared_memory_races(order):
    assert_fails(
        READ_WRITE_RACE, "shared-memory race", "since the last barrier", "(block (0, 0, 0), thread (", order=order
    )
    assert_fails(WRITE_WRITE_RACE, "shared-memory race", "a write of 4 bytes", order=order)


def test_out_of_bounds_global_access():
    assert_fails(
        OUT_OF_BOUNDS_WRITE,
        "out-of-bounds global access: a write of 4 bytes",
        "outside every array given to the launch",
        "(block (0, 0, 0), thread (63, 0, 0))",
    )
    assert_fails(OUT_OF_BOUNDS_READ, "out-of-bounds global access: a read of 4 bytes", "thread (63, 0, 0)")


def test_launches_over_the_device_limits():
    assert_fails(TOO_MANY_THREADS, "launch over the device limits", "blockDim.x = 1025 (at most 1024)")
    assert_fails(TOO_MUCH_DYNAMIC_SHARED, "launch over the device limits", "233472 bytes of dynamic shared memory")
    assert_fails(TOO_MUCH_STATIC_SHARED, "launch over the device limits", "static shared memory spans at least 50176")


def test_warp_divergence():
    assert_fails(WARP_DIVERGENCE, "warp divergence", "__reduce_add_sync", "never join", "(block (0, 0, 0), thread (")


def test_an_op_breaking_a_rule_fails_with_a_runtime_error_naming_it():
    """The rule reaches the caller of an op: here scan_region's __syncthreads_or removed from the
    ngram_match kernel, so a thread's atomicMin on the shared best match meets another's read of it."""
    from tests.cuda_emu.test_mutations import mutated, sites_in

    arrays = {
        "token_ids_all": np.array([[1, 2, 3, 1, 2, 3, 1, 2, 0, 0]], np.int64),
        "prompt_lens": np.array([6], np.int64),
        "step_idx": np.array([2], np.int64),
        "draft_token_num": np.array([3], np.int32),
        "draft_tokens": np.full((1, 4), -1, np.int64),
        "seq_lens_this_time": np.ones(1, np.int32),
        "seq_lens_encoder": np.zeros(1, np.int32),
        "seq_lens_decoder": np.ones(1, np.int32),
        "max_dec_len": np.array([100], np.int64),
    }
    first_barrier = sites_in("ngram_match.cu")[0]
    with (
        mutated(*first_barrier),
        pytest.raises(
            RuntimeError,
            match="ngram_match: the cuda_emulator kernel failed: "
            "CUDA emulation: shared-memory race: an atomic .* thread \\(",
        ),
    ):
        fastspec.arrays.ngram_match(*arrays.values(), max_ngram_size=3, backend="cuda_emulator")

"""The XPU emulation catches what it claims to (custom_ops/xpu/emulation/probes.xpu: one small
kernel per broken rule), and the pointer API's XPU arguments are checked."""

from __future__ import annotations

import numpy as np
import pytest

import fastspec.arrays
from fastspec.core.errors import FastspecArgumentError
from tests.helpers.ngram_cases import ARRAY_NAMES, spec_example

FENCED, MISSING_FENCE, SHARED_UNWRITTEN, SOURCE_CHANGED, OVER_BUDGET, WRONG_SPACE, EARLY_EXIT = range(7)
OK, EMULATION_ERROR = 0, -3  # fastspec::kOk, kXpuEmulationError
VALUES = list(range(1, 33))
POISON = int(np.frombuffer(b"\xa5" * 4, np.int32)[0])


def probe(which: int, grid=(2, 16)):
    status, error, out = fastspec.arrays.module().xpu_probe(which, grid, VALUES)
    return status, error, np.array(out)


def test_an_async_copy_completed_by_its_fence_reads_right():
    status, error, out = probe(FENCED)
    assert status == OK and error == ""
    assert (out == sum(VALUES)).all()


def test_a_missing_fence_reads_poison():
    status, _, out = probe(MISSING_FENCE)
    assert status == OK  # nothing to report: the kernel just reads undefined bits, as on the device
    assert (out != sum(VALUES)).all()
    poisoned_sum = (POISON * len(VALUES) + 2**31) % 2**32 - 2**31  # int32 arithmetic, as in the kernel
    assert (out == poisoned_sum).all()  # every element of the LM buffer was still poisoned


def test_shared_memory_starts_poisoned_in_every_cluster():
    status, _, out = probe(SHARED_UNWRITTEN, grid=(3, 4))
    assert status == OK and (out == POISON).all()


def test_an_async_source_changed_before_its_fence_is_reported():
    status, error, _ = probe(SOURCE_CHANGED)
    assert status == EMULATION_ERROR
    assert "LM2GM_ASYNC" in error and "source changed" in error


def test_a_copy_over_the_local_memory_budget_is_reported():
    status, error, _ = probe(OVER_BUDGET)
    assert status == EMULATION_ERROR
    assert "GM2LM" in error and "budget 6144" in error


def test_a_copy_into_the_wrong_space_is_reported():
    status, error, _ = probe(WRONG_SPACE)
    assert status == EMULATION_ERROR
    assert "destination is not in local memory" in error


def test_cores_that_returned_count_as_arrived_at_a_barrier():
    status, error, out = probe(EARLY_EXIT, grid=(2, 8))
    assert status == OK and error == ""
    assert out.reshape(2, 8)[:, 0::2].tolist() == [[1] * 4] * 2  # the even cores passed the barrier


class HostDLPack:
    """A host array that is not numpy: it speaks DLPack only."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_the_emulated_xpu_takes_numpy_arrays_only():
    arrays, attrs = spec_example()
    arrays["prompt_lens"] = HostDLPack(arrays["prompt_lens"])
    with pytest.raises(FastspecArgumentError, match="xpu_emulator' runs on numpy arrays.*'prompt_lens' is a dlpack"):
        fastspec.arrays.ngram_match(*(arrays[n] for n in ARRAY_NAMES), **attrs, backend="xpu_emulator")


@pytest.mark.parametrize("grid", [(0, 64), (1, 65), (256, 1), (12,), "12x64"])
def test_a_bad_grid_is_an_error(grid):
    arrays, attrs = spec_example()
    with pytest.raises(FastspecArgumentError, match="xpu_grid"):
        fastspec.arrays.ngram_match(*(arrays[n] for n in ARRAY_NAMES), **attrs, backend="xpu_emulator", xpu_grid=grid)


def test_an_unknown_backend_is_an_error():
    arrays, attrs = spec_example()
    with pytest.raises(FastspecArgumentError, match="backend must be"):
        fastspec.arrays.ngram_match(*(arrays[n] for n in ARRAY_NAMES), **attrs, backend="xpu")

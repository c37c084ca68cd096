"""The two emulated devices CI runs the device kernels on, and how a test launches them.

The XPU runs on every grid the kernels must handle, clusters forward and reversed; the CUDA
device runs its blocks (and each block's threads) forward, reversed and in two seeded shuffles.
Random cases cycle through a device's launches, so each launch sees a share of every batch kind.
The sizes differ per device only where the two emulators differ in speed or in what stresses
their launch (many clusters against many blocks)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

XPU_GRIDS = ((1, 64), (2, 64), (12, 64), (3, 16))  # (clusters, cores); (3, 16): the kernels are shape-free
CUDA_ORDERS = (("forward", 0), ("reverse", 0), ("shuffle", 1), ("shuffle", 2))


def _describe_xpu(options: dict) -> str:
    order = "reversed" if options["xpu_reverse_clusters"] else "forward"
    return f"grid {options['xpu_grid']} {order}"


def _describe_cuda(options: dict) -> str:
    order = options["cuda_block_order"]
    return f"{order} {options['cuda_shuffle_seed']}" if order == "shuffle" else order


@dataclass(frozen=True)
class EmulatedDevice:
    name: str
    launches: tuple[dict, ...]  # fastspec.arrays keyword arguments, one launch each
    describe: Callable[[dict], str]
    wide: tuple[int, ...]  # indices of the launches that spread rows over the most workers
    random_cases: int  # cases per random test (the XPU emulator is the faster one)
    large_batches: tuple[int, ...]  # slots in one verify/update launch
    many_slots: tuple[int, int]  # (batch, max_model_len) of the n-gram test with the most slots
    large_vocab_rows: tuple[list[int], tuple[str, ...]]  # rows per request and row kinds at V = 151936

    def launch(self, case: int) -> dict:
        """The keyword arguments of fastspec.arrays for random case number ``case``."""
        return self.launches[case % len(self.launches)]

    def __str__(self) -> str:
        return self.name


XPU = EmulatedDevice(
    "xpu",
    tuple(
        {"backend": "xpu_emulator", "xpu_grid": grid, "xpu_reverse_clusters": reverse}
        for grid in XPU_GRIDS
        for reverse in (False, True)
    ),
    _describe_xpu,
    wide=(4, 5),
    random_cases=400,
    large_batches=(1, 100, 1000),
    many_slots=(300, 256),
    large_vocab_rows=([2, 1, 2], ("peaked", "uniform", "ties", "special", "zeros")),
)
CUDA = EmulatedDevice(
    "cuda",
    tuple(
        {"backend": "cuda_emulator", "cuda_block_order": order, "cuda_shuffle_seed": seed}
        for order, seed in CUDA_ORDERS
    ),
    _describe_cuda,
    wide=(2,),
    random_cases=300,
    large_batches=(1, 300, 4096),
    many_slots=(1500, 64),
    large_vocab_rows=([1, 1], ("peaked", "ties", "zeros")),
)
DEVICES = (XPU, CUDA)
EVERY_LAUNCH = [(device, options) for device in DEVICES for options in device.launches]


def launch_id(value) -> str:
    """pytest ids for EVERY_LAUNCH's pairs."""
    return (
        str(value)
        if isinstance(value, EmulatedDevice)
        else (_describe_xpu(value) if value["backend"] == "xpu_emulator" else _describe_cuda(value))
    )


def check_random_calls(
    device: EmulatedDevice,
    calls: Iterable[tuple],
    run: Callable,
    reference: Callable,
    assert_same: Callable,
    first_launch: int = 0,
) -> None:
    """Each call (the positional arguments of ``run`` and ``reference``) on one launch of ``device``, call i on
    launch ``first_launch + i`` (so a batch of random calls cycles through the launches), compared with the
    reference by ``assert_same(actual, expected, context)``."""
    for i, call in enumerate(calls):
        options = device.launch(first_launch + i)
        assert_same(run(*call, **options), reference(*call), f"case {i} {device.describe(options)}")

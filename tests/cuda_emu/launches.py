"""How the CUDA-emulator tests launch the kernels: blocks (and each block's threads) forward,
reversed and in two seeded shuffles. Random cases cycle through the orders, so each one sees a
share of every batch kind."""

from __future__ import annotations

ORDERS = (("forward", 0), ("reverse", 0), ("shuffle", 1), ("shuffle", 2))
LAUNCHES = tuple({"backend": "cuda_emulator", "cuda_block_order": order, "cuda_shuffle_seed": seed}
                 for order, seed in ORDERS)


def launch(case: int) -> dict:
    """The keyword arguments of fastspec.kernels for random case number `case`."""
    return LAUNCHES[case % len(LAUNCHES)]


def describe(options: dict) -> str:
    order = options["cuda_block_order"]
    return f"{order} {options['cuda_shuffle_seed']}" if order == "shuffle" else order

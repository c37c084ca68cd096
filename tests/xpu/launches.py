"""How the XPU tests launch the emulated kernels: every grid the issue names, clusters forward and
reversed. Random cases cycle through the launches, so each one sees a share of every batch kind."""

from __future__ import annotations

GRIDS = ((1, 64), (2, 64), (12, 64), (3, 16))  # (clusters, cores); (3, 16): the kernels are shape-free
LAUNCHES = tuple({"backend": "xpu_emulator", "xpu_grid": grid, "xpu_reverse_clusters": reverse}
                 for grid in GRIDS for reverse in (False, True))


def launch(case: int) -> dict:
    """The keyword arguments of fastspec.arrays for random case number `case`."""
    return LAUNCHES[case % len(LAUNCHES)]


def describe(options: dict) -> str:
    order = "reversed" if options["xpu_reverse_clusters"] else "forward"
    return f"grid {options['xpu_grid']} {order}"

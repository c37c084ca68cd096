"""fastspec: speculative-decoding ops for PaddlePaddle (CPU and CUDA; XPU is planned).

``fastspec.ops`` holds the Paddle ops (importing it loads the compiled
library and Paddle); ``fastspec.reference`` is the numpy contract and needs
neither; ``fastspec.kernels`` runs the kernels from any framework through raw
pointers. Each op's contract is in ``docs/ops/<op>.md``. The demo and its
stand-in models live apart, in ``fastspec.demo``. ``python -m fastspec info``
says what this install holds; ``python -m fastspec check`` (or :func:`run_check`)
runs every op on every backend here against the reference.
"""

__version__ = "0.1.0"

from fastspec.errors import FastspecArgumentError, FastspecBuildError, FastspecTypeError  # noqa: E402


def run_check(verbose: bool = True) -> bool:
    """Runs every op on every backend available here against the numpy reference and prints the
    table (``python -m fastspec check`` does the same); True when nothing failed."""
    from fastspec.cli.check import run_check as check

    return check(verbose=verbose)


__all__ = ["FastspecArgumentError", "FastspecBuildError", "FastspecTypeError", "__version__", "run_check"]

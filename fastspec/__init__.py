"""fastspec: speculative-decoding ops for PaddlePaddle (CPU and CUDA; XPU is planned).

``fastspec.ops`` holds the Paddle ops (importing it loads the compiled
library and Paddle); ``fastspec.reference`` is the numpy contract and needs
neither; ``fastspec.kernels`` runs the kernels from any framework through raw
pointers. Each op's contract is in ``docs/ops/<op>.md``. The demo and its
stand-in models live apart, in ``fastspec.demo``.
"""

__version__ = "0.1.0"

from fastspec.errors import FastspecArgumentError, FastspecBuildError, FastspecTypeError  # noqa: E402

__all__ = ["FastspecArgumentError", "FastspecBuildError", "FastspecTypeError", "__version__"]

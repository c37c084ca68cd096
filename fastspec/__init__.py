"""fastspec: speculative-decoding ops for PaddlePaddle model runners (CPU, CUDA, Kunlunxin XPU).

One package per layer, imports pointing one way (docs/DEVELOPING.md):

- ``fastspec.core``: the op declarations (schema), their checks, errors and dtype codes;
- front ends: ``fastspec.ops`` (Paddle tensors; loads the op library and Paddle) and
  ``fastspec.arrays`` (numpy / torch / cupy arrays through the pointer API, no Paddle);
- ``fastspec.reference``: the numpy contract of every op (needs neither);
- ``fastspec.runtime``: state, sampler, step, the ``generate`` loop, config, proposers and the
  adaptive draft length.

``python -m fastspec info`` says what this install holds and runs here; ``python -m fastspec check``
(or ``fastspec.cli.check.run_check()``) runs every op on every backend here against the reference.
The demo (``python -m fastspec.demo``) runs from a source checkout and is not part of the wheel.
"""

__version__ = "0.1.0"

from fastspec import _moved  # noqa: E402
from fastspec.core.errors import FastspecArgumentError, FastspecBuildError, FastspecTypeError  # noqa: E402

_moved.install()


__all__ = ["FastspecArgumentError", "FastspecBuildError", "FastspecTypeError", "__version__"]

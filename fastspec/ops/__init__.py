"""fastspec's Paddle ops. Importing this module loads the compiled library.

Inputs are Paddle tensors in SPEC.md order, attributes are keywords; in-place
tensors are updated in place and returned. See ``docs/ops.md``.
"""

from fastspec.ops._library import FastspecArgumentError, FastspecBuildError, load
from fastspec.ops.ngram import ngram_match

load()

__all__ = ["FastspecArgumentError", "FastspecBuildError", "ngram_match"]

"""fastspec's Paddle ops. Importing this module loads the compiled library.

Inputs are Paddle tensors in SPEC.md order, attributes are keywords; in-place
tensors are updated in place and returned. See ``docs/ops.md``.
"""

from fastspec.ops._library import FastspecArgumentError, FastspecBuildError, load
from fastspec.ops.ngram import ngram_append, ngram_match
from fastspec.ops.sampling import sample_tokens, top_p_candidates
from fastspec.ops.model_status import update_model_status
from fastspec.ops.verify import VerifyStrategy, verify_draft_tokens

load()

__all__ = ["FastspecArgumentError", "FastspecBuildError", "ngram_append", "ngram_match", "sample_tokens", "top_p_candidates", "update_model_status", "VerifyStrategy", "verify_draft_tokens"]

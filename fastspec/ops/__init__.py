"""fastspec's Paddle ops. Importing this module loads the compiled op library.

Every op takes its tensors in the order of docs/ops/<op>.md, positionally or by name, and its
attributes by keyword; in-place tensors are updated in place and returned.
Each op is declared once in :mod:`fastspec.core.schema`; the functions here are
built from those declarations. ``help(fastspec.ops.<op>)`` shows the arguments
and an example; docs/ops/ has the full contracts.
"""

from fastspec.core.errors import FastspecArgumentError, FastspecBuildError, FastspecTypeError
from fastspec.core.wrappers import make_op, result_type
from fastspec.ops._eager import fast_path
from fastspec.ops._library import load, run
from fastspec.core.schema import SCHEMAS, VerifyStrategy

load()

_SETUP = ">>> import paddle, fastspec.ops as fs; T = paddle.to_tensor"


def _op(name: str):
    return make_op(SCHEMAS[name], run, module=__name__, setup=_SETUP, outputs_are_args=False,
                   fast_path=fast_path(SCHEMAS[name]))


# one function per declared op, in SCHEMAS' order (tests/test_schema.py checks each name)
(ngram_match, ngram_append, top_p_candidates, sample_tokens, top_k_top_p_probs, verify_draft_tokens,
 update_model_status, adaptive_plan, adaptive_observe, build_draft_tree, verify_draft_tree,
 apply_token_bitmask) = map(_op, SCHEMAS)

NgramDrafts = result_type("ngram_match")
TopPCandidates = result_type("top_p_candidates")
VerifyResult = result_type("verify_draft_tokens")
ModelStatus = result_type("update_model_status")
AdaptivePlan = result_type("adaptive_plan")
AdaptiveEstimates = result_type("adaptive_observe")

__all__ = ["AdaptiveEstimates", "AdaptivePlan", "FastspecArgumentError", "FastspecBuildError", "FastspecTypeError",
           "ModelStatus", "NgramDrafts", "TopPCandidates", "VerifyResult", "VerifyStrategy", "adaptive_observe",
           "adaptive_plan", "build_draft_tree", "ngram_append", "ngram_match", "sample_tokens", "top_k_top_p_probs", "top_p_candidates",
           "update_model_status", "verify_draft_tokens", "verify_draft_tree", "apply_token_bitmask"]

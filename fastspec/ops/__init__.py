"""fastspec's Paddle ops. Importing this module loads the compiled op library.

Every op takes its tensors in the order of docs/ops/<op>.md, positionally or by name, and its
attributes by keyword; in-place tensors are updated in place and returned.
Each op is declared once in :mod:`fastspec.core.schema`; the functions here are
built from those declarations. ``help(fastspec.ops.<op>)`` shows the arguments
and an example; docs/ops/ has the full contracts.
"""

from fastspec.core.errors import FastspecArgumentError, FastspecBuildError, FastspecTypeError
from fastspec.core.wrappers import make_op, result_type
from fastspec.ops._library import load, run
from fastspec.core.schema import SCHEMAS, VerifyStrategy

load()

_SETUP = ">>> import paddle, fastspec.ops as fs; T = paddle.to_tensor"


def _op(name: str):
    return make_op(SCHEMAS[name], run, module=__name__, setup=_SETUP, outputs_are_args=False)


ngram_match = _op("ngram_match")
ngram_append = _op("ngram_append")
top_p_candidates = _op("top_p_candidates")
sample_tokens = _op("sample_tokens")
top_k_top_p_probs = _op("top_k_top_p_probs")
verify_draft_tokens = _op("verify_draft_tokens")
update_model_status = _op("update_model_status")

NgramDrafts = result_type("ngram_match")
TopPCandidates = result_type("top_p_candidates")
VerifyResult = result_type("verify_draft_tokens")
ModelStatus = result_type("update_model_status")

__all__ = ["FastspecArgumentError", "FastspecBuildError", "FastspecTypeError", "ModelStatus", "NgramDrafts",
           "TopPCandidates", "VerifyResult", "VerifyStrategy", "ngram_append", "ngram_match", "sample_tokens",
           "top_k_top_p_probs", "top_p_candidates", "update_model_status", "verify_draft_tokens"]

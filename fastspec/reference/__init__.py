"""Numpy reference implementations: the executable contract of every op.

Plain, literal code that follows the op contracts (restated per op in
``docs/ops/*.md``) step by step. Every backend is tested against these functions. They import
numpy and the pure-Python ``fastspec.core`` only, so they run where Paddle is absent (the GPU test host).
"""

from fastspec.reference.adaptive import adaptive_observe, adaptive_plan
from fastspec.reference.bitmask import apply_token_bitmask
from fastspec.reference.block import verify_block
from fastspec.reference.logits import process_logits
from fastspec.reference.logprobs import emitted_logprobs
from fastspec.reference.model_inputs import model_inputs
from fastspec.reference.model_status import update_model_status
from fastspec.reference.ngram import ngram_append, ngram_match
from fastspec.reference.packing import pack_rows
from fastspec.reference.rejection import verify_rejection
from fastspec.reference.rng import (
    STREAM_ACCEPT,
    STREAM_DRAFT,
    STREAM_RESAMPLE,
    STREAM_TARGET,
    STREAM_TOPP,
    philox4x32_10,
    rand64,
)
from fastspec.reference.sampling import (
    bf16_bits_to_f32,
    sample_tokens,
    sampling_distribution,
    top_k_top_p_probs,
    top_p_candidates,
)
from fastspec.reference.softmax import temperature_softmax
from fastspec.reference.step_status import step_status
from fastspec.reference.trees import build_draft_tree, check_draft_trees, verify_draft_tree
from fastspec.reference.verify import verify_draft_tokens

__all__ = [
    "STREAM_ACCEPT",
    "adaptive_observe",
    "adaptive_plan",
    "apply_token_bitmask",
    "STREAM_DRAFT",
    "STREAM_RESAMPLE",
    "STREAM_TARGET",
    "STREAM_TOPP",
    "bf16_bits_to_f32",
    "build_draft_tree",
    "emitted_logprobs",
    "check_draft_trees",
    "model_inputs",
    "ngram_append",
    "ngram_match",
    "pack_rows",
    "philox4x32_10",
    "process_logits",
    "rand64",
    "sample_tokens",
    "sampling_distribution",
    "step_status",
    "temperature_softmax",
    "top_k_top_p_probs",
    "top_p_candidates",
    "update_model_status",
    "verify_block",
    "verify_draft_tokens",
    "verify_draft_tree",
    "verify_rejection",
]

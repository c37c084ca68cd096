"""What the fuzzer calls: every op (verify_draft_tokens and verify_draft_tree once per strategy), with the generator of
its well-formed calls and its numpy reference (``fastspec.reference``).

A reference returns the expected value of every tensor the op returns (its in-place tensors,
then its new ones), by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from fastspec import reference as ref
from fastspec.core.errors import FastspecArgumentError
from fastspec.core.schema import STRATEGIES, TREE_STRATEGIES
from tests.helpers.adaptive_cases import OBSERVE_NAMES, PLAN_NAMES
from tests.helpers.adaptive_cases import outputs as adaptive_outputs
from tests.helpers.bitmask_cases import NAMES as BITMASK_NAMES
from tests.helpers.logits_cases import NAMES as LOGITS_NAMES
from tests.helpers.logprobs_cases import NAMES as LOGPROBS_NAMES
from tests.helpers.model_inputs_cases import NAMES as MODEL_INPUTS_NAMES
from tests.helpers.model_inputs_cases import OUTPUTS as MODEL_INPUTS_OUTPUTS
from tests.helpers.ngram_cases import ARRAY_NAMES as NGRAM_NAMES
from tests.helpers.pack_rows_cases import NAMES as PACK_NAMES
from tests.helpers.pack_rows_cases import OUTPUTS as PACK_OUTPUTS
from tests.helpers.softmax_cases import NAMES as SOFTMAX_NAMES
from tests.helpers.step_status_cases import NAMES as STATUS_NAMES
from tests.helpers.tree_cases import BUILD_NAMES, BUILD_OUTPUTS, VERIFY_TREE_NAMES, VERIFY_TREE_OUTPUTS
from tests.helpers.verify_update_cases import UPDATE_NAMES, UPDATE_OUTPUTS, VERIFY_NAMES

from .gen_adaptive import observe_call, plan_call
from .gen_bitmask import bitmask_call
from .gen_logits import logits_call
from .gen_logprobs import logprobs_call
from .gen_model_inputs import model_inputs_call
from .gen_ngram import ngram_call
from .gen_pack_rows import pack_rows_call
from .gen_sampling import candidates_call, probs_call, sample_call
from .gen_softmax import softmax_call
from .gen_step_status import step_status_call
from .gen_trees import build_call, verify_tree_call
from .gen_verify_update import update_call, verify_call

Arrays = dict[str, np.ndarray | None]


@dataclass(frozen=True)
class Target:
    name: str
    op: str
    generate: Callable[[np.random.Generator], tuple[Arrays, dict]]
    reference: Callable[[Arrays, dict], dict[str, np.ndarray]]
    xpu_share: float = 0.125  # of its cases on the emulated XPU (a sampling row there costs ~20x the CPU's)
    # values the checked call refuses by name (per-slot values the schema cannot see: verify_draft_tree's trees);
    # such a well-formed call is launched unchecked instead, as a device stream runs it
    refuses_values: Callable[[Arrays], bool] = lambda arrays: False
    # a NaN output matches any NaN: the op computes with NaN inputs (its settings and estimates), and which
    # NaN a product or sum of two NaNs gives is the hardware's choice (x86 keeps the first operand's,
    # NVIDIA GPUs give one canonical NaN); docs/ops/adaptive.md
    any_nan: bool = False


def _ngram_reference(function):
    def expected(a: Arrays, attrs: dict) -> dict[str, np.ndarray]:
        # The reference tries every n from max_ngram_size down, literally; no n above the longest
        # sequence searched (L generated tokens plus K model drafts) can match, so the fuzzer's
        # max_ngram_size = 2^31 - 1 is cut to that length here (the same answer, in seconds).
        longest = a["token_ids_all"].shape[1] + a["draft_tokens"].shape[1]
        attrs = {**attrs, "max_ngram_size": min(attrs["max_ngram_size"], longest)}
        attrs["min_ngram_size"] = min(attrs.get("min_ngram_size", 1), longest + 1)
        result = function(*(a[name] for name in NGRAM_NAMES), **attrs, ngram_anchor=a.get("ngram_anchor"))
        return dict(zip(("draft_tokens", "seq_lens_this_time", "ngram_anchor"), result))

    return expected


def _candidates_reference(a: Arrays, attrs: dict) -> dict[str, np.ndarray]:
    per_row = (a["batch_id_per_token_output"], a.get("min_p"))
    ids, scores, lens = ref.top_p_candidates(a["probs"], a["top_p"], *per_row, **attrs)
    return {"candidate_ids": ids, "candidate_scores": scores, "candidate_lens": lens}


def _sample_reference(a: Arrays, attrs: dict) -> dict[str, np.ndarray]:
    names = ("probs", "top_p", "top_k", "seed", "step_idx", "batch_id_per_token_output", "cu_seqlens_q_output")
    stream = attrs.get("rand_stream", ref.STREAM_TARGET)
    tokens = ref.sample_tokens(*(a[n] for n in names), a.get("min_p"), stream=stream)
    return {"tokens": tokens}


def _probs_reference(a: Arrays, attrs: dict) -> dict[str, np.ndarray]:
    names = ("probs", "top_p", "top_k", "batch_id_per_token_output")
    return {"target_probs": ref.top_k_top_p_probs(*(a[n] for n in names), a.get("min_p"))}


def _verify_reference(a: Arrays, attrs: dict) -> dict[str, np.ndarray]:
    strategy = getattr(attrs["strategy"], "value", attrs["strategy"])
    flags = {k: attrs[k] for k in ("accept_all", "reject_all") if k in attrs}
    tokens, num = ref.verify_draft_tokens(
        *(a[name] for name in VERIFY_NAMES),
        strategy=strategy,
        target_probs=a.get("target_probs"),
        draft_probs=a.get("draft_probs"),
        **flags,
    )
    return {"accept_tokens": tokens, "accept_num": num}


def _update_reference(a: Arrays, attrs: dict) -> dict[str, np.ndarray]:
    return dict(zip((*UPDATE_OUTPUTS, "has_running"), ref.update_model_status(*(a.get(name) for name in UPDATE_NAMES))))


def _build_tree_reference(a: Arrays, attrs: dict) -> dict[str, np.ndarray]:
    return dict(zip(BUILD_OUTPUTS, ref.build_draft_tree(*(a[name] for name in BUILD_NAMES), **attrs)))


def _verify_tree_reference(a: Arrays, attrs: dict) -> dict[str, np.ndarray]:
    """The kernels' answer (a malformed tree: no drafts judged); the checked call's refusal is tests/fuzz/check.py's."""
    result = ref.verify_draft_tree(*(a[name] for name in VERIFY_TREE_NAMES), **attrs, check=False)
    return dict(zip(VERIFY_TREE_OUTPUTS, result))


def _plan_reference(a: Arrays, attrs: dict) -> dict[str, np.ndarray]:
    return dict(zip(adaptive_outputs("adaptive_plan"), ref.adaptive_plan(*(a[n] for n in PLAN_NAMES), **attrs)))


def _observe_reference(a: Arrays, attrs: dict) -> dict[str, np.ndarray]:
    return dict(zip(adaptive_outputs("adaptive_observe"), ref.adaptive_observe(*(a[n] for n in OBSERVE_NAMES))))


def _logits_reference(a: Arrays, attrs: dict) -> dict[str, np.ndarray]:
    return {"logits": ref.process_logits(*(a[n] for n in LOGITS_NAMES))}


def _bad_trees(a: Arrays) -> bool:
    try:
        ref.check_draft_trees(
            "verify_draft_tree",
            a["draft_tree_parents"],
            a["seq_lens_this_time"],
            a["seq_lens_encoder"],
            max_depth=a["accept_tokens"].shape[1] - 1,
        )
    except FastspecArgumentError:
        return True
    return False


def _bitmask_reference(a: Arrays, attrs: dict) -> dict[str, np.ndarray]:
    return {"logits": ref.apply_token_bitmask(*(a[name] for name in BITMASK_NAMES))}


def _softmax_reference(a: Arrays, attrs: dict) -> dict[str, np.ndarray]:
    return {"probs": ref.temperature_softmax(*(a[name] for name in SOFTMAX_NAMES))}


def _logprobs_reference(a: Arrays, attrs: dict) -> dict[str, np.ndarray]:
    return {"logprob_keys": ref.emitted_logprobs(*(a[name] for name in LOGPROBS_NAMES), **attrs)}


def _pack_rows_reference(a: Arrays, attrs: dict) -> dict[str, np.ndarray]:
    return dict(zip(PACK_OUTPUTS, ref.pack_rows(*(a[name] for name in PACK_NAMES))))


def _model_inputs_reference(a: Arrays, attrs: dict) -> dict[str, np.ndarray]:
    return dict(zip(MODEL_INPUTS_OUTPUTS, ref.model_inputs(*(a[name] for name in MODEL_INPUTS_NAMES))))


def _step_status_reference(a: Arrays, attrs: dict) -> dict[str, np.ndarray]:
    return {"status": ref.step_status(*(a[name] for name in STATUS_NAMES))}


def _per_strategy(op: str, call, reference, strategy: str, **options) -> Target:
    """The target of ``op`` under one strategy: ``call(rng, strategy)`` draws its cases."""
    return Target(f"{op}[{strategy}]", op, lambda rng: call(rng, strategy), reference, **options)


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target(
            "ngram_match", "ngram_match", lambda rng: ngram_call(rng, append=False), _ngram_reference(ref.ngram_match)
        ),
        Target(
            "ngram_append", "ngram_append", lambda rng: ngram_call(rng, append=True), _ngram_reference(ref.ngram_append)
        ),
        Target("top_p_candidates", "top_p_candidates", candidates_call, _candidates_reference, xpu_share=0.05),
        Target("sample_tokens", "sample_tokens", sample_call, _sample_reference, xpu_share=0.05),
        Target("top_k_top_p_probs", "top_k_top_p_probs", probs_call, _probs_reference, xpu_share=0.05),
        *(_per_strategy("verify_draft_tokens", verify_call, _verify_reference, s) for s in STRATEGIES),
        Target("update_model_status", "update_model_status", update_call, _update_reference),
        Target("build_draft_tree", "build_draft_tree", build_call, _build_tree_reference),
        *(
            _per_strategy("verify_draft_tree", verify_tree_call, _verify_tree_reference, s, refuses_values=_bad_trees)
            for s in TREE_STRATEGIES
        ),
        Target("adaptive_plan", "adaptive_plan", plan_call, _plan_reference, any_nan=True),
        Target("adaptive_observe", "adaptive_observe", observe_call, _observe_reference, any_nan=True),
        Target("process_logits", "process_logits", logits_call, _logits_reference, any_nan=True),
        Target("apply_token_bitmask", "apply_token_bitmask", bitmask_call, _bitmask_reference),
        Target("temperature_softmax", "temperature_softmax", softmax_call, _softmax_reference),
        Target("emitted_logprobs", "emitted_logprobs", logprobs_call, _logprobs_reference),
        Target("pack_rows", "pack_rows", pack_rows_call, _pack_rows_reference),
        Target("model_inputs", "model_inputs", model_inputs_call, _model_inputs_reference),
        Target("step_status", "step_status", step_status_call, _step_status_reference),
    )
}

"""Serving scenarios for ``SpecEngine`` tests: a batch-invariant target, workloads, every proposer's
set-up, and a driver that adds, aborts and preempts requests at random steps."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import paddle

from fastspec.demo.draft_models import ReplayAuxHiddenStates, ReplayDraftHead, ReplayEagle3Head, ReplayHiddenStates
from fastspec.demo.models import ReplayModel
from fastspec.runtime.config import SpeculativeConfig
from fastspec.runtime.engine import SpecEngine
from fastspec.runtime.state import RequestParams

V, END, SEP = 64, 0, 2
LAYERS, AUX_IDS = 4, (1, 2, 4)  # the eagle3 stand-in's decoder layers and the aux states its head reads


class ContextReplayModel(ReplayModel):
    """``ReplayModel`` whose logits also depend on the token in the row's own column (the newest token of the
    row's context): one token, hashed from it and the position, gets a bump. A pure function of each row, so
    batch-invariant, that still notices a wrong context (a resumed request whose recomputed prefix were not
    the one it had)."""

    BUMP = 3.0

    def __call__(self, inputs):
        logits = super().__call__(inputs)
        slot = paddle.clip(inputs.row_slot, min=0).astype("int64")
        newest = paddle.clip(paddle.gather_nd(inputs.tokens, paddle.stack([slot, inputs.row_col], axis=1)), min=0)
        bumped = (newest * 7 + inputs.row_pos * 13) % self.vocab_size
        return logits + paddle.nn.functional.one_hot(bumped, self.vocab_size).astype(logits.dtype) * self.BUMP


@dataclass
class Workload:
    prompts: dict  # request id -> prompt
    refs: dict  # request id -> the continuation the target favours
    params: dict  # request id -> RequestParams


def copy_workload(
    count: int, seed: int, temperature: float, max_dec_len: tuple[int, int] = (3, 20), penalties: bool = True
) -> Workload:
    """Copy-heavy requests (the reference repeats the prompt with a few tokens changed) of random
    prompt lengths, seeds, output lengths and, for a positive temperature, top_p / top_k."""
    rng = np.random.default_rng(seed)
    prompts, refs, params = {}, {}, {}
    for i in range(count):
        text = rng.integers(3, V, size=int(rng.integers(6, 24)))
        ref = text.copy()
        ref[rng.choice(len(text), size=max(1, len(text) // 8), replace=False)] = rng.integers(3, V)
        prompts[i], refs[i] = text.tolist() + [SEP], np.concatenate([ref, ref]).tolist()
        top_p = float(rng.choice([1.0, 0.9])) if temperature > 0 else 1.0
        top_k = int(rng.choice([0, 5])) if temperature > 0 else 0
        # penalties read each row's history (prompt, output, drafts before it): a resumed request's too
        penalty = dict(
            repetition_penalty=float(rng.choice([1.0, 1.2])), frequency_penalty=float(rng.choice([0.0, 0.4]))
        )
        params[i] = RequestParams(
            seed=int(rng.integers(0, 2**62)),
            max_dec_len=int(rng.integers(*max_dec_len)),
            temperature=temperature,
            top_p=top_p,
            top_k=top_k,
            **(penalty if penalties else {}),
        )
    return Workload(prompts, refs, params)


def max_len(work: Workload) -> int:
    return max(len(work.prompts[i]) + work.params[i].max_dec_len for i in work.prompts)


# name -> config keys (num_speculative_tokens 3 unless said); the strategy and sampling come from the test
PROPOSERS = {
    "none": {"method": "none"},
    "ngram": {"method": "ngram"},
    "ngram_adaptive": {"method": "ngram", "adaptive": {"enabled": True, "cost_model": "roofline"}},
    "suffix": {"method": "suffix"},
    "suffix_tree": {
        "method": "suffix",
        "suffix": {"with_anchored_ngram": False, "min_token_prob": 0.05},
        "tree": {"enabled": True, "top_k": 2, "max_nodes": 6},
    },
    "mtp": {"method": "mtp"},
    "mtp_tree": {"method": "mtp", "tree": {"enabled": True, "top_k": 2, "max_nodes": 6}},
    "hybrid": {"method": "mtp", "num_model_steps": 1},
    "eagle3": {"method": "eagle3", "aux_layer_ids": list(AUX_IDS)},
}


def config(proposer: str, strategy: str) -> SpeculativeConfig:
    keys = dict(PROPOSERS[proposer])
    if keys["method"] != "none":
        keys.update(num_speculative_tokens=3, verify_strategy=strategy)
    return SpeculativeConfig.from_dict(keys)


def target_and_head(proposer: str, refs: dict):
    """``(model, draft_model)`` for a proposer name: the context replay target, with the hidden states
    (and a replay head) a draft-model proposer reads."""
    base = ContextReplayModel(refs, V, end_token=END, peak=0.8)
    method = PROPOSERS[proposer]["method"]
    if method == "mtp":
        return ReplayHiddenStates(base), ReplayDraftHead(refs, V, end_token=END, peak=0.9)
    if method == "eagle3":
        return ReplayAuxHiddenStates(base, AUX_IDS, num_layers=LAYERS), ReplayEagle3Head(
            refs, V, AUX_IDS, end_token=END
        )
    return base, None


def alone(work: Workload, ids, length: int) -> dict:
    """Each request run by itself (one slot, no speculation): request id -> its tokens."""
    engine = SpecEngine(
        ContextReplayModel(work.refs, V, end_token=END, peak=0.8),
        config("none", "greedy"),
        max_num_seqs=1,
        max_model_len=length,
        end_tokens=[END],
    )
    outputs = {}
    for i in ids:
        engine.add_request(i, work.prompts[i], work.params[i])
        while engine.has_unfinished():
            for out in engine.step():
                outputs.setdefault(out.request_id, []).extend(out.new_tokens)
    return outputs


@dataclass
class Served:
    streamed: dict = field(default_factory=dict)  # request id -> tokens, in the order streamed
    reasons: dict = field(default_factory=dict)  # request id -> finish reason
    preemptions: int = 0
    aborts: int = 0
    steps: int = 0
    max_running: int = 0


def serve(
    engine: SpecEngine,
    work: Workload,
    ids,
    decoys,
    rng: np.random.Generator,
    *,
    abort_rate: float = 0.3,
    preempt_rate: float = 0.25,
    check: bool = True,
) -> Served:
    """Adds ``ids`` and ``decoys`` in a random order, 0 to 3 a step; at random steps (and at the latest
    at steps 2 and 3) preempts a running request and aborts a live decoy; checks the engine's invariants after every step; records what was
    streamed and why each request finished (each exactly once)."""
    arrivals = [int(i) for i in rng.permutation(list(ids) + list(decoys))]
    decoys = set(decoys)
    served = Served()
    while arrivals or engine.has_unfinished():
        for _ in range(int(rng.integers(0, 4))):
            if arrivals:
                i = arrivals.pop(0)
                engine.add_request(i, work.prompts[i], work.params[i])
        live = [d for d in sorted(decoys) if d in engine]
        if live and (rng.random() < abort_rate or (served.aborts == 0 and served.steps >= 3)):
            engine.abort(live[int(rng.integers(len(live)))])
            served.aborts += 1
        running = engine.running_ids()
        if running and (rng.random() < preempt_rate or (served.preemptions == 0 and served.steps >= 2)):
            engine.preempt(running[int(rng.integers(len(running)))])
            served.preemptions += 1
        for out in engine.step():
            assert out.request_id not in served.reasons, f"request {out.request_id} reported after it finished"
            served.streamed.setdefault(out.request_id, []).extend(out.new_tokens)
            if out.finished:
                served.reasons[out.request_id] = out.finish_reason
        served.max_running = max(served.max_running, engine.num_running)
        if check:
            engine.check_invariants()
        served.steps += 1
        assert served.steps < 5000, "the engine made no progress"
    return served

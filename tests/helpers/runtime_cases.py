"""Small runtime set-ups several test modules share: the copy task the replay model serves, a state
whose slots are decoding, a hand-made step cost for the adaptive controller, and a demo workload's
run on the CPU."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import paddle

from fastspec.runtime.config import SpeculativeConfig
from fastspec.runtime.generation import GenerationResult, generate
from fastspec.runtime.state import RequestParams, SpecState


def copy_task(n, length=60, seed=0, vocab=64):
    """Prompts ``text + [sep]`` and references ``text`` with a few substituted tokens."""
    rng = np.random.default_rng(seed)
    prompts, refs = [], {}
    for i in range(n):
        text = rng.integers(3, vocab, size=length)
        ref = text.copy()
        for j in rng.choice(length, size=length // 15, replace=False):
            ref[j] = rng.integers(3, vocab)
        prompts.append(text.tolist() + [2])
        refs[i] = ref.tolist()
    return prompts, refs


def decoding_state(k=3, prompts=([5, 6, 7, 8, 5, 6, 7, 9], [1, 2, 3, 1, 2]), generated=([5, 6], [1]), length=32):
    """A state whose slots are decoding: prompts inserted, then ``generated`` tokens committed."""
    state = SpecState(len(prompts) + 1, length, k, end_tokens=[0], place="cpu")
    for i, (prompt, gen) in enumerate(zip(prompts, generated)):
        slot = state.insert(prompt, RequestParams(seed=i, max_dec_len=16), request_id=i)
        p = len(prompt)
        state.token_ids_all[slot, p : p + len(gen)] = paddle.to_tensor(np.asarray(gen, np.int64))
        state.step_idx[slot] = len(gen)
        state.seq_lens_encoder[slot] = 0
        state.seq_lens_decoder[slot] = p + len(gen) - 1
        state.seq_lens_this_time[slot] = 1
        state.draft_tokens[slot, 0] = gen[-1]
    return state


@dataclass
class LineCost:
    """A hand-made step cost: ``intercept + slope x tokens`` seconds."""

    intercept: float
    slope: float
    version: int = 0

    def seconds(self, tokens):
        return self.intercept + self.slope * np.asarray(tokens, dtype=np.float64)

    def record(self, tokens, seconds):
        pass


def generate_workload(model, work, config, *, batch: int, params, **options) -> GenerationResult:
    """``generate`` of a demo workload's prompts on the CPU, ``batch`` slots, each as long as the longest
    prompt and reference allow (8 tokens to spare); ``options``: its other keywords."""
    length = max(map(len, work.prompts)) + max(map(len, work.references.values())) + 8
    return generate(
        model,
        work.prompts,
        config,
        max_num_seqs=batch,
        max_model_len=length,
        end_tokens=[work.tokenizer.END],
        place="cpu",
        params=params,
        **options,
    )


REPLAY_AUX_IDS = (1, 2, 4)  # the layers whose hidden states the replay EAGLE3 target returns (of 4)


def replay_target_and_head(method: str, refs: dict, vocab: int = 64, peaks: tuple[float, float] = (0.95, 0.8)):
    """The copy task's replay target for ``method`` (end token 0) and its draft head, None where the method has
    none: hidden states for mtp and hybrid, the auxiliary ones of ``REPLAY_AUX_IDS`` for eagle3. ``peaks``: the
    probability the target and the head give the reference's token."""
    from fastspec.demo.draft_models import (
        ReplayAuxHiddenStates,
        ReplayDraftHead,
        ReplayEagle3Head,
        ReplayHiddenStates,
    )
    from fastspec.demo.models import ReplayModel

    target_peak, head_peak = peaks
    model = ReplayModel(refs, vocab, end_token=0, peak=target_peak)
    if method in ("mtp", "hybrid"):
        return ReplayHiddenStates(model), ReplayDraftHead(refs, vocab, end_token=0, peak=head_peak)
    if method == "eagle3":
        head = ReplayEagle3Head(refs, vocab, REPLAY_AUX_IDS, end_token=0, peak=head_peak)
        return ReplayAuxHiddenStates(model, REPLAY_AUX_IDS, num_layers=4), head
    return model, None


def generate_replay(
    method: str,
    prompts,
    refs: dict,
    config,
    *,
    slots: int,
    peaks: tuple[float, float] = (0.95, 0.8),
    model_wrapper=None,
    **options,
) -> GenerationResult:
    """``generate`` of the copy task on ``replay_target_and_head(method, peaks=peaks)`` (the target wrapped by
    ``model_wrapper`` where one is given) with ``slots`` slots; ``options``: its other keywords."""
    target, head = replay_target_and_head(method, refs, peaks=peaks)
    if model_wrapper is not None:
        target = model_wrapper(target)
    return generate(target, prompts, config, max_num_seqs=slots, end_tokens=[0], draft_model=head, **options)


def speculation(method: str, strategy: str, tree: bool = False, k: int = 4) -> SpeculativeConfig:
    """``k`` drafts by ``method`` verified by ``strategy``, as a chain or as a tree (the top 2 at each node, 8
    nodes at most); speculation off for method "none"."""
    config = {"method": method, "num_speculative_tokens": k, "verify_strategy": strategy}
    if tree:
        config["tree"] = {"enabled": True, "top_k": 2, "max_nodes": 8}
    return SpeculativeConfig.from_dict(config if method != "none" else {})

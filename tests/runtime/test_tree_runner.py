"""The runner's tree step (docs/trees.md): step for step equal to a numpy simulation (the head's top-k expansion
written anew, then the references of build_draft_tree, verify_draft_tree and update_model_status) in the eager
and static modes; lossless against spec off; more tokens per step than the chain; bad tree configs named."""

from __future__ import annotations

import numpy as np
import paddle
import pytest

from fastspec import reference as ref
from fastspec.demo.draft_models import (
    GridHiddenStates,
    ReplayAuxHiddenStates,
    ReplayDraftHead,
    ReplayEagle3Head,
    ReplayHiddenStates,
    TinyDraftHead,
)
from fastspec.demo.models import ReplayModel, TinyTransformer
from fastspec.runtime.config import ConfigError, SpeculativeConfig
from fastspec.runtime.generation import ModelInputs, generate
from fastspec.runtime.proposers import NgramProposer
from fastspec.runtime.sampler import Sampler
from fastspec.runtime.state import RequestParams, SpecState
from fastspec.runtime.step import SpecStep
from tests.helpers.op_names import UPDATE_OUTPUTS
from tests.helpers.runtime_cases import copy_task

V, K, TOP_K, N, END = 64, 3, 2, 7, 0
AUX_IDS = (1, 2, 4)
SNAPSHOT = (
    "accept_tokens",
    "accept_num",
    "accept_nodes",
    "draft_tree_tokens",
    "draft_tree_parents",
    "step_idx",
    "stop_flags",
    "token_ids_all",
    "seq_lens_decoder",
)


def workload(count: int = 4, temperature: float = 1.0):
    prompts, refs = copy_task(count, length=40, seed=7)
    params = [
        RequestParams(seed=31 + i, max_dec_len=14 + 6 * i, temperature=temperature, top_p=0.95) for i in range(count)
    ]
    return prompts, refs, params


def replay_pair(method: str, refs):
    model = ReplayModel(refs, V, end_token=END, peak=0.8)
    if method == "eagle3":
        return ReplayAuxHiddenStates(model, AUX_IDS, num_layers=4), ReplayEagle3Head(refs, V, AUX_IDS, END, peak=0.6)
    return ReplayHiddenStates(model), ReplayDraftHead(refs, V, END, peak=0.6)


def config(method: str = "mtp", strategy: str = "target_match", tree: bool = True, **tree_keys) -> SpeculativeConfig:
    return SpeculativeConfig.from_dict(
        {
            "method": method,
            "num_speculative_tokens": K,
            "verify_strategy": strategy,
            "aux_layer_ids": list(AUX_IDS),
            "tree": {"enabled": tree, "top_k": TOP_K, "max_nodes": N, **tree_keys},
        }
    )


# -- the simulation -----------------------------------------------------------------------------------------


def top_k_tree(head, last: np.ndarray, hidden: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """EAGLE-2's candidates, written anew: per depth, expand every previous candidate by every token and keep
    the TOP_K best cumulative log-probabilities (a stable sort: ties to the lower (parent, token))."""
    b = len(last)
    tokens, parents, scores = [], [], []
    ids, state, score = last, hidden, np.zeros((b, 1), np.float32)
    for depth in range(K):
        logits, out = head(paddle.to_tensor(ids), paddle.to_tensor(state))
        logp = paddle.nn.functional.log_softmax(logits.astype("float32"), axis=-1).numpy()
        total = (score.reshape(-1, 1) + logp).reshape(b, -1)
        best = np.argsort(-total, axis=1, kind="stable")[:, :TOP_K]
        source, token = best // V, best % V
        tokens.append(token)
        parents.append(source + (depth - 1) * TOP_K if depth else np.full_like(source, -1))
        scores.append(np.take_along_axis(total, best, axis=1))
        rows = (np.arange(b)[:, None] * (score.size // b) + source).reshape(-1)
        ids, state, score = token.reshape(-1).astype(np.int64), out.numpy()[rows], scores[-1]
    return (
        np.concatenate(tokens, 1).astype(np.int64),
        np.concatenate(parents, 1).astype(np.int32),
        np.concatenate(scores, 1).astype(np.float32),
    )


def first_children(tokens: np.ndarray, parents: np.ndarray, count: int) -> np.ndarray:
    """Per node, its first child's token (-1 for a leaf)."""
    first = np.full(len(tokens), -1, np.int64)
    for c in range(count - 1, 0, -1):
        first[parents[c]] = tokens[c]
    return first


def simulate(target, head, prompts, params, strategy: str, length: int) -> list[dict]:
    """The tree step in numpy and the references, one slot per request; what each step leaves in the state."""
    b, s = len(prompts), {}
    s["token_ids_all"] = np.full((b, length), -1, np.int64)
    for i, p in enumerate(prompts):
        s["token_ids_all"][i, : len(p)] = p
    prompt_lens = np.array([len(p) for p in prompts], np.int64)
    seed = np.array([q.seed for q in params], np.int64)
    max_dec = np.array([q.max_dec_len for q in params], np.int64)
    temperature = np.array([q.temperature for q in params], np.float32)
    greedy = temperature <= 0
    top_p = np.where(greedy, 0, np.array([q.top_p for q in params], np.float32)).astype(np.float32)
    top_k = np.where(greedy, 1, 0).astype(np.int32)
    s.update(
        seq_lens_encoder=prompt_lens.astype(np.int32),
        seq_lens_decoder=np.zeros(b, np.int32),
        seq_lens_this_time=prompt_lens.astype(np.int32),
        step_idx=np.zeros(b, np.int64),
        stop_flags=np.zeros(b, bool),
        accept_tokens=np.full((b, K + 1), -1, np.int64),
        accept_num=np.zeros(b, np.int32),
        draft_tokens=np.full((b, K + 1), -1, np.int64),
        draft_tree_tokens=np.full((b, N), -1, np.int64),
    )
    blocked, ends = np.zeros(b, bool), np.array([END], np.int64)
    hidden, observed, steps = None, np.zeros(b, bool), []
    while not s["stop_flags"].all():
        enc, dec, stop = s["seq_lens_encoder"], s["seq_lens_decoder"], s["stop_flags"]
        decode = ~stop & (enc == 0) & (dec > 0)
        cand = (
            np.full((b, K * TOP_K), -1, np.int64),
            np.full((b, K * TOP_K), -1, np.int32),
            np.zeros((b, K * TOP_K), np.float32),
        )
        if hidden is not None:
            cand = top_k_tree(head, s["draft_tokens"][:, 0].copy(), hidden)
            cand[0][~(decode & observed)] = -1
        s["draft_tree_tokens"][:, 0] = s["draft_tokens"][:, 0]
        s["draft_tree_tokens"], lens, s["draft_tree_parents"], depths = ref.build_draft_tree(
            *cand, s["draft_tree_tokens"], s["seq_lens_this_time"], enc, dec, max_depth=K
        )
        room = np.clip(length + 1 - prompt_lens - s["step_idx"], 1, N)
        s["seq_lens_this_time"] = lens = np.where(decode, np.minimum(lens, room), lens).astype(np.int32)
        rows = np.where(~stop & (enc > 0), 1, np.where(decode, lens, 0))
        cu = np.concatenate([[0], np.cumsum(rows)]).astype(np.int32)
        row_slot = np.repeat(np.arange(b), rows).astype(np.int32)
        node = np.arange(cu[-1]) - cu[:-1][row_slot]
        node_depth = np.maximum(depths[row_slot, node], 0)
        base = np.where(enc > 0, prompt_lens - 1, prompt_lens + s["step_idx"] - 1)
        inputs = ModelInputs(
            tokens=paddle.zeros([b, length], "int64"),
            lengths=paddle.zeros([b], "int64"),
            row_slot=paddle.to_tensor(row_slot),
            row_pos=paddle.to_tensor((base[row_slot] + node_depth).astype(np.int64)),
            prompt_lens=paddle.to_tensor(np.asarray(prompt_lens, np.int64)),
            request_ids=list(range(b)),
        )
        logits, row_hidden = target(inputs)
        temp = np.where(temperature > 0, temperature, 1)[row_slot]
        probs = paddle.nn.functional.softmax(
            logits.astype("float32") / paddle.to_tensor(temp).unsqueeze(-1), axis=-1
        ).numpy()
        target_tokens = target_probs = draft_probs = None
        if strategy == "greedy":
            target_tokens = probs.argmax(axis=1)
        elif strategy == "target_match":  # each row at its own position, step_idx + depth
            rows_as_slots = np.arange(len(row_slot), dtype=np.int32)
            target_tokens = ref.sample_tokens(
                probs,
                top_p[row_slot],
                top_k[row_slot],
                seed[row_slot],
                s["step_idx"][row_slot] + node_depth,
                rows_as_slots,
                np.arange(len(row_slot) + 1, dtype=np.int32),
            )
        else:
            target_probs = ref.top_k_top_p_probs(probs, top_p, top_k, row_slot)
            draft_probs = np.zeros_like(probs)
            for t, (slot, i) in enumerate(zip(row_slot, node)):
                if enc[slot] == 0:  # a prefill slot's tree is its root alone
                    child = first_children(
                        s["draft_tree_tokens"][slot], s["draft_tree_parents"][slot], int(lens[slot])
                    )[i]
                    draft_probs[t, child] = float(child >= 0)
        s["accept_tokens"], s["accept_num"], s["accept_nodes"] = ref.verify_draft_tree(
            s["accept_tokens"],
            s["accept_num"],
            s["draft_tree_tokens"],
            s["draft_tree_parents"],
            target_tokens,
            seed,
            s["step_idx"],
            stop,
            blocked,
            enc,
            lens,
            cu,
            max_dec,
            ends,
            target_probs,
            draft_probs,
            strategy=strategy,
        )
        names = UPDATE_OUTPUTS
        out = ref.update_model_status(
            *(s[n] for n in names[:8]), s["token_ids_all"], prompt_lens, blocked, max_dec, ends
        )
        s.update(zip(names, out[:9]))
        kept = s["accept_num"] > 0
        last = (
            cu[:-1]
            + np.take_along_axis(s["accept_nodes"], np.maximum(s["accept_num"] - 1, 0)[:, None].astype(np.int64), 1)[
                :, 0
            ]
        )
        row_hidden = row_hidden.numpy()
        hidden = np.zeros((b, row_hidden.shape[1]), np.float32) if hidden is None else hidden
        hidden[kept] = row_hidden[last[kept]]
        observed |= kept
        steps.append({n: np.array(s[n], copy=True) for n in SNAPSHOT})
        for slot in np.flatnonzero(s["stop_flags"] & (s["draft_tokens"][:, 0] >= 0)):  # generate frees a finished slot
            for name in ("seq_lens_encoder", "seq_lens_decoder", "seq_lens_this_time", "accept_num"):
                s[name][slot] = 0
            s["draft_tokens"][slot] = -1
    return steps


STEP_CASES = [
    (m, st, mode)
    for m in ("mtp", "eagle3")
    for st in ("greedy", "target_match", "rejection")
    for mode in ("eager", "static")
]


@pytest.mark.parametrize("method, strategy, mode", STEP_CASES, ids=["-".join(c) for c in STEP_CASES])
def test_the_tree_step_equals_the_numpy_simulation(method, strategy, mode):
    prompts, refs, params = workload(temperature=0.0 if strategy == "greedy" else 1.0)
    target, head = replay_pair(method, refs)
    length = max(len(p) for p in prompts) + max(q.max_dec_len for q in params)  # generate's default: tight at the end
    steps = []
    result = generate(
        target,
        prompts,
        config(method, strategy),
        end_tokens=[END],
        params=params,
        draft_model=head,
        step_mode=mode,
        on_step=lambda st: steps.append({n: getattr(st, n).numpy().copy() for n in SNAPSHOT}),
    )
    expected = simulate(target, head, prompts, params, strategy, length)
    assert len(steps) == len(expected) > 5
    for i, (got, want) in enumerate(zip(steps, expected)):
        for name in SNAPSHOT:
            np.testing.assert_array_equal(got[name], want[name], err_msg=f"step {i}: {name}")
    assert result.stats.accepted_tokens > 0 and (np.concatenate([s["accept_nodes"] for s in steps]) > 1).any()
    if mode == "static":
        assert result.stats.program_builds == {"prepare": 1, "finish": 1}


# -- end to end -----------------------------------------------------------------------------------------------


def run(method: str, strategy: str, tree: bool, temperature: float = 1.0):
    prompts, refs, params = workload(6, temperature)
    target, head = replay_pair(method, refs)
    spec = config(method, strategy, tree) if method != "none" else SpeculativeConfig.from_dict({})
    return generate(target, prompts, spec, max_num_seqs=3, end_tokens=[END], params=params, draft_model=head)


@pytest.mark.parametrize("method", ["mtp", "eagle3"])
@pytest.mark.parametrize("strategy, temperature", [("greedy", 0.0), ("target_match", 1.0), ("rejection", 0.0)])
def test_a_tree_emits_what_spec_off_emits_and_more_per_step(method, strategy, temperature):
    """GREEDY, and TARGET_MATCH (a node's target drawn at its own position), give spec off's tokens; so does
    REJECTION at temperature 0. The tree takes fewer steps than the chain of the same head."""
    off, chain, tree = (run(m, strategy, t, temperature) for m, t in (("none", False), (method, False), (method, True)))
    for a, b in zip(off.outputs, tree.outputs):
        np.testing.assert_array_equal(b, a)
    stats = tree.stats
    assert stats.generated_tokens == sum(len(o) for o in tree.outputs) == stats.accepted_tokens + stats.bonus_tokens
    assert stats.accepted_tokens == sum(stats.accepted_per_position) <= stats.proposed_tokens
    assert stats.mean_accepted_length > chain.stats.mean_accepted_length and stats.steps < chain.stats.steps


def test_rejection_trees_run_sampled():
    chain, tree = run("mtp", "rejection", False), run("mtp", "rejection", True)
    assert tree.stats.mean_accepted_length > chain.stats.mean_accepted_length > 1.5


def test_the_transformer_sees_the_tree_and_stays_lossless():
    """A real attention: each node attends to the committed tokens and its ancestors at its own position,
    so the greedy tree step equals spec off token for token."""
    max_len, prompts = 48, [[5, 6, 7, 8], [9, 10, 11], [12, 13, 14, 15, 16]]
    target = GridHiddenStates(TinyTransformer(V, max_len, seed=1))
    spec = SpeculativeConfig.from_dict(
        {
            "method": "mtp",
            "num_speculative_tokens": 3,
            "verify_strategy": "greedy",
            "tree": {"enabled": True, "top_k": 3, "max_nodes": 10},
            "sampling": {"max_dec_len": 30, "temperature": 0.0},
        }
    )
    kw = dict(max_num_seqs=2, max_model_len=max_len, end_tokens=[0])
    off = generate(
        target, prompts, spec.replace(method="none", num_speculative_tokens=0, tree={"enabled": False}), **kw
    )
    on = generate(target, prompts, spec, draft_model=TinyDraftHead(V, 64, seed=2), **kw)
    for a, b in zip(off.outputs, on.outputs):
        np.testing.assert_array_equal(b, a)
    assert on.stats.proposed_tokens > 0


# -- bad configs ---------------------------------------------------------------------------------------------

BAD = [
    ({"method": "ngram"}, "tree.enabled needs method 'mtp', 'eagle3', 'suffix'"),
    ({"method": "suffix"}, "with method 'suffix' needs suffix.with_anchored_ngram: false"),
    (
        {"verify_strategy": "topp"},
        r"tree.enabled needs verify_strategy one of \['greedy', 'target_match', 'rejection'\]",
    ),
    ({"verify_strategy": "block"}, "got 'block'"),
    ({"accept_policy": "accept_all"}, "does not combine with accept_policy 'accept_all'"),
    ({"adaptive": {"enabled": True}}, "does not combine with adaptive.enabled"),
    ({"num_model_steps": 1}, r"does not combine with num_model_steps 1 \(hybrid"),
    ({"tree": {"enabled": True, "max_nodes": 1}}, r"tree.max_nodes must be in \[2, 128\], got 1"),
    ({"tree": {"enabled": True, "max_nodes": 129}}, r"tree.max_nodes must be in \[2, 128\], got 129"),
    ({"tree": {"enabled": True, "top_k": 0}}, r"tree.top_k must be in \[1, 1024\], got 0"),
    (
        {"tree": {"enabled": True, "top_k": 400}},
        r"tree.top_k \* num_speculative_tokens must be at most 1024 .*, got 400 \* 3",
    ),
    ({"tree": {"enabled": "yes"}}, "tree.enabled must be a boolean"),
    ({"tree": {"width": 3}}, "unknown key 'tree.width'"),
]


@pytest.mark.parametrize("change, message", BAD, ids=[m[:40] for _, m in BAD])
def test_bad_tree_configs_are_named(change, message):
    data = {"method": "mtp", "num_speculative_tokens": K, "verify_strategy": "greedy", "tree": {"enabled": True}}
    with pytest.raises(ConfigError, match=message):
        SpeculativeConfig.from_dict({**data, **change})


def test_a_tree_step_needs_a_tree_proposer():
    state = SpecState(2, 32, K, [END], "cpu", num_tree_nodes=N)
    spec = config(strategy="greedy")
    with pytest.raises(ValueError, match="a tree step .* needs a proposer that drafts trees .*got NgramProposer"):
        SpecStep(state, Sampler(spec), NgramProposer(K), mode="eager")

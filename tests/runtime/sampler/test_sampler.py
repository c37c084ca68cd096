"""Sampler: both branches against the numpy references, naive == verify with reject_all, lossless GREEDY."""

import numpy as np
import paddle
import pytest

from fastspec import reference
from fastspec.demo.models import TinyTransformer
from fastspec.runtime.config import SpeculativeConfig
from fastspec.runtime.generation import generate
from fastspec.runtime.sampler import Sampler
from fastspec.runtime.state import RequestParams, SpecState
from tests.helpers.op_names import UPDATE_OUTPUTS

V = 40
STATE_NAMES = UPDATE_OUTPUTS


def config(**kw):
    sampling = kw.pop("sampling", {})
    return SpeculativeConfig.from_dict({**kw, "sampling": {"max_dec_len": 12, **sampling}})


def make_state(k, temperatures=(0.0, 0.7, 1.0), top_p=(1.0, 0.8, 0.95), top_k=(0, 5, 0)):
    state = SpecState(len(temperatures) + 1, 48, k, end_tokens=[0, 1], place="cpu")
    rng = np.random.default_rng(1)
    for i, t in enumerate(temperatures):
        prompt = rng.integers(2, V, size=5 + 3 * i)
        state.insert(
            prompt,
            RequestParams(seed=100 + i, max_dec_len=12, temperature=t, top_p=top_p[i], top_k=top_k[i]),
            request_id=i,
        )
    return state


def host(state):
    return {name: getattr(state, name).numpy().copy() for name in STATE_NAMES}


def reference_update(before, state):
    outs = reference.update_model_status(
        *(before[n] for n in STATE_NAMES),
        state.prompt_lens.numpy(),
        state.is_block_step.numpy(),
        state.max_dec_len.numpy(),
        state.end_tokens.numpy(),
    )
    return dict(zip(STATE_NAMES, outs[:-1])), outs[-1]


def greedy_params(state):
    greedy = state.temperature.numpy() <= 0
    return np.where(greedy, 0.0, state.top_p.numpy()).astype(np.float32), np.where(
        greedy, 1, state.top_k.numpy()
    ).astype(np.int32)


def assert_state(state, want):
    for name in STATE_NAMES:
        np.testing.assert_array_equal(getattr(state, name).numpy(), want[name], err_msg=name)


def test_naive_branch_matches_reference():
    state = make_state(k=0)
    t = state.pack_rows()
    logits = paddle.to_tensor(np.random.default_rng(2).normal(size=(t, V)).astype(np.float32) * 3)
    rows = state.row_batch_ids()
    probs = Sampler._probs(logits, state, rows).numpy()
    top_p, top_k = greedy_params(state)
    tokens = reference.sample_tokens(
        probs, top_p, top_k, state.seed.numpy(), state.step_idx.numpy(), rows.numpy(), state.cu_seqlens_q_output.numpy()
    )
    assert tokens[0] == np.argmax(probs[0])  # temperature 0 is greedy
    before = host(state)
    before["accept_tokens"][:3, 0] = tokens
    before["accept_num"][:3] = 1
    want, want_running = reference_update(before, state)

    has_running = Sampler(config(method="naive"))(logits, state)
    assert_state(state, want)
    assert bool(has_running.numpy()[0]) == bool(want_running[0])
    np.testing.assert_array_equal(state.step_idx.numpy(), [1, 1, 1, 0])


@pytest.mark.parametrize("strategy", ["greedy", "target_match", "topp"])
@pytest.mark.parametrize("policy", ["normal", "accept_all", "reject_all"])
def test_verify_branch_matches_reference(strategy, policy):
    k = 3
    state = make_state(k)
    cfg = config(
        method="ngram",
        num_speculative_tokens=k,
        verify_strategy=strategy.upper(),
        accept_policy=policy,
        max_candidate_len=4,
    )
    sampler = Sampler(cfg)
    rng = np.random.default_rng(3)
    # one naive-like prefill step first, so the slots decode
    state.pack_rows()
    first = rng.normal(size=(3, V)).astype(np.float32)
    first[:, :2] = -1e9  # no end token yet: every slot goes on decoding
    sampler(paddle.to_tensor(first), state)
    # drafts of different lengths; make the target like them so some are accepted
    drafts = np.array([[5, 6, 7], [8, 9, -1], [10, -1, -1], [-1, -1, -1]], np.int64)
    state.draft_tokens[:, 1:] = paddle.to_tensor(drafts)
    state.seq_lens_this_time[:] = paddle.to_tensor(np.array([4, 3, 2, 0], np.int32))
    t = state.pack_rows()
    logits = rng.normal(size=(t, V)).astype(np.float32)
    cu = state.cu_seqlens_q_output.numpy()
    for b in range(3):
        for i, d in enumerate(drafts[b]):
            if d >= 0 and i < 2:
                logits[cu[b] + i, d] += 6.0
    logits = paddle.to_tensor(logits)

    rows = state.row_batch_ids()
    probs = Sampler._probs(logits, state, rows).numpy()
    top_p, top_k = greedy_params(state)
    target = ids = scores = lens = None
    if strategy == "greedy":
        target = np.argmax(probs, axis=-1)
    elif strategy == "target_match":
        target = reference.sample_tokens(
            probs, top_p, top_k, state.seed.numpy(), state.step_idx.numpy(), rows.numpy(), cu
        )
    else:
        ids, scores, lens = reference.top_p_candidates(probs, top_p, rows.numpy(), max_candidate_len=4)
    before = host(state)
    before["accept_tokens"], before["accept_num"] = reference.verify_draft_tokens(
        before["accept_tokens"],
        before["accept_num"],
        before["draft_tokens"],
        target,
        ids,
        scores,
        lens,
        state.seed.numpy(),
        state.step_idx.numpy(),
        state.stop_flags.numpy(),
        state.is_block_step.numpy(),
        state.seq_lens_encoder.numpy(),
        state.seq_lens_this_time.numpy(),
        cu,
        state.reasoning_status.numpy(),
        state.max_dec_len.numpy(),
        state.end_tokens.numpy(),
        strategy=strategy,
        accept_all=policy == "accept_all",
        reject_all=policy == "reject_all",
    )
    want, _ = reference_update(before, state)
    sampler(logits, state)
    assert_state(state, want)
    emitted = want["accept_num"][:3]
    if policy == "reject_all":
        np.testing.assert_array_equal(emitted, [1, 1, 1])
    if policy == "accept_all":
        np.testing.assert_array_equal(emitted, [4, 3, 2])


def random_prompts(n, seed=0, vocab=V):
    rng = np.random.default_rng(seed)
    return [rng.integers(2, vocab, size=int(rng.integers(3, 15))).tolist() for _ in range(n)]


@pytest.fixture(scope="module")
def transformer():
    return TinyTransformer(V, max_len=64, seed=7)


def run(model, prompts, cfg, max_dec_lens, max_num_seqs=None):
    params = [
        RequestParams(seed=10 + i, max_dec_len=m, temperature=cfg.sampling.temperature, top_p=cfg.sampling.top_p)
        for i, m in enumerate(max_dec_lens)
    ]
    return generate(model, prompts, cfg, params=params, max_num_seqs=max_num_seqs, max_model_len=64, end_tokens=[0, 1])


def assert_same_outputs(off, on):
    """Every request's output is the same token for token (and no request is missing from either)."""
    assert len(off.outputs) == len(on.outputs)
    for i, (a, b) in enumerate(zip(off.outputs, on.outputs)):
        np.testing.assert_array_equal(a, b, err_msg=f"request {i}")


@pytest.mark.parametrize("strategy", ["target_match", "greedy"])
def test_naive_equals_verify_with_reject_all(transformer, strategy):
    prompts = random_prompts(4, seed=1)
    temperature = 1.0 if strategy == "target_match" else 0.0
    off = run(
        transformer,
        prompts,
        config(method="naive", sampling={"temperature": temperature, "top_p": 0.9}),
        [20, 14, 25, 9],
    )
    on = run(
        transformer,
        prompts,
        config(
            method="ngram",
            num_speculative_tokens=3,
            verify_strategy=strategy,
            accept_policy="reject_all",
            sampling={"temperature": temperature, "top_p": 0.9},
        ),
        [20, 14, 25, 9],
    )
    assert_same_outputs(off, on)
    assert on.stats.accepted_tokens == 0 and on.stats.proposed_tokens > 0


@pytest.mark.parametrize("max_num_seqs", [None, 2])
def test_greedy_spec_on_is_lossless(transformer, max_num_seqs):
    """Requests of different lengths finishing at different times; spec on == spec off, token for token."""
    prompts = random_prompts(5, seed=2)
    lens = [30, 12, 41, 22, 5]
    off = run(transformer, prompts, config(method="none", sampling={"temperature": 0.0}), lens, max_num_seqs)
    on = run(
        transformer,
        prompts,
        config(method="ngram", num_speculative_tokens=4, verify_strategy="greedy", sampling={"temperature": 0.0}),
        lens,
        max_num_seqs,
    )
    assert_same_outputs(off, on)
    assert on.stats.accepted_tokens > 0, "no draft was accepted: the test would not exercise verification"
    assert on.stats.steps < off.stats.steps
    assert len({len(o) for o in off.outputs}) > 1  # they do finish at different times


def test_target_match_spec_on_is_lossless_when_sampling(transformer):
    prompts = random_prompts(3, seed=3)
    cfg = {"sampling": {"temperature": 0.8, "top_p": 0.95}}
    off = run(transformer, prompts, config(method="naive", **cfg), [25, 18, 30])
    on = run(
        transformer,
        prompts,
        config(method="ngram", num_speculative_tokens=4, verify_strategy="target_match", **cfg),
        [25, 18, 30],
    )
    assert_same_outputs(off, on)


def test_topp_runs_end_to_end(transformer):
    prompts = random_prompts(3, seed=4)
    max_dec_lens = [20, 10, 15]
    sampling = {"temperature": 1.0, "top_p": 0.9}
    spec = config(method="ngram", num_speculative_tokens=3, verify_strategy="topp", sampling=sampling)
    res = run(transformer, prompts, spec, max_dec_lens)
    lengths = [len(o) for o in res.outputs]
    assert len(lengths) == len(max_dec_lens)
    assert all(0 < n <= m for n, m in zip(lengths, max_dec_lens)), lengths  # each request within its own limit

"""REJECTION's target distribution in the Sampler is the distribution sample_tokens draws from:
the top_k_top_p_probs op, bit for bit the reference's, with greedy requests one-hot."""

from __future__ import annotations

import numpy as np
import paddle

import fastspec.ops as ops
from fastspec import reference as ref
from fastspec.reference.sampling import sampling_distribution
from fastspec.runtime.config import SpeculativeConfig
from fastspec.runtime.sampler import Sampler
from fastspec.runtime.state import RequestParams, SpecState


def test_matches_sample_tokens_distribution():
    rng = np.random.default_rng(0)
    b, v = 4, 50
    for trial in range(20):
        probs = rng.random((6, v)).astype(np.float32) ** 3
        probs[rng.random((6, v)) < 0.2] = 0
        probs /= probs.sum(axis=1, keepdims=True)
        rows = rng.integers(0, b, 6).astype(np.int32)
        top_p = rng.choice([0.0, 0.3, 0.9, 1.0], b).astype(np.float32)
        top_k = rng.choice([0, 1, 5, 60], b).astype(np.int32)
        got = ops.top_k_top_p_probs(*(paddle.to_tensor(x) for x in (probs, top_p, top_k, rows))).numpy()
        want_bits = ref.top_k_top_p_probs(probs, top_p, top_k, rows).view(np.uint32)
        np.testing.assert_array_equal(got.view(np.uint32), want_bits)
        for t in range(6):
            want = sampling_distribution(probs[t], float(top_p[rows[t]]), int(top_k[rows[t]]))
            np.testing.assert_array_equal(got[t] > 0, want > 0, err_msg=f"trial {trial} row {t}: support")
            np.testing.assert_allclose(got[t], want, atol=1e-6, err_msg=f"trial {trial} row {t}")


def test_sampler_verifies_against_the_op_and_greedy_rows_are_one_hot(monkeypatch):
    """The Sampler hands verify_draft_tokens exactly top_k_top_p_probs of its softmax, with temperature 0
    read as top_k 1 (one-hot argmax, smallest id on ties)."""
    k, v = 2, 30
    state = SpecState(3, 32, k, end_tokens=[0], place="cpu")
    for slot, (temperature, top_p, top_k) in enumerate(((0.0, 1.0, 0), (1.0, 0.8, 0), (0.7, 0.95, 4))):
        state.insert(
            [3 + slot, 4, 5],
            RequestParams(seed=slot, max_dec_len=10, temperature=temperature, top_p=top_p, top_k=top_k),
        )
    rows_count = state.pack_rows()
    logits = np.random.default_rng(1).normal(size=(rows_count, v)).astype(np.float32) * 2
    logits[0, [7, 9]] = 50.0  # the greedy row ties: id 7 wins
    seen = {}
    real_verify = ops.verify_draft_tokens

    def spy(*args, **kwargs):
        seen["target_probs"] = kwargs["target_probs"].numpy().copy()
        return real_verify(*args, **kwargs)

    monkeypatch.setattr(ops, "verify_draft_tokens", spy)
    config = SpeculativeConfig.from_dict({"method": "mtp", "num_speculative_tokens": k, "verify_strategy": "rejection"})
    rows = state.row_batch_ids()
    probs = Sampler._probs(paddle.to_tensor(logits), state, rows).numpy()
    draft_probs = paddle.to_tensor(np.full((rows_count, v), 1.0 / v, np.float32))
    Sampler(config)(paddle.to_tensor(logits), state, draft_probs=draft_probs)

    greedy = np.array([True, False, False])
    top_p = np.where(greedy, 0.0, [1.0, 0.8, 0.95]).astype(np.float32)
    top_k = np.where(greedy, 1, [0, 0, 4]).astype(np.int32)
    want = ref.top_k_top_p_probs(probs, top_p, top_k, rows.numpy())
    np.testing.assert_array_equal(seen["target_probs"].view(np.uint32), want.view(np.uint32))
    first_greedy_row = int(np.flatnonzero(rows.numpy() == 0)[0])
    one_hot = np.zeros(v, np.float32)
    one_hot[7] = 1.0
    np.testing.assert_array_equal(seen["target_probs"][first_greedy_row], one_hot)

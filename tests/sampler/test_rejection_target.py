"""REJECTION's target distribution in the Sampler equals the distribution sample_tokens draws from."""

from __future__ import annotations

import numpy as np
import paddle

from fastspec.reference.sampling import sampling_distribution
from fastspec.sampler import _sampling_distribution
from fastspec.state import SpecState


def test_matches_sample_tokens_distribution():
    rng = np.random.default_rng(0)
    b, v = 4, 50
    state = SpecState(b, 8, 1, [0], "cpu")
    for trial in range(20):
        probs = rng.random((6, v)).astype(np.float32) ** 3
        probs[rng.random((6, v)) < 0.2] = 0
        probs /= probs.sum(axis=1, keepdims=True)
        rows = rng.integers(0, b, 6).astype(np.int32)
        top_p = rng.choice([0.0, 0.3, 0.9, 1.0], b).astype(np.float32)
        top_k = rng.choice([0, 1, 5, 60], b).astype(np.int32)
        got = _sampling_distribution(paddle.to_tensor(probs), state, paddle.to_tensor(rows),
                                     paddle.to_tensor(top_p), paddle.to_tensor(top_k)).numpy()
        for t in range(6):
            want = sampling_distribution(probs[t], float(top_p[rows[t]]), int(top_k[rows[t]]))
            np.testing.assert_array_equal(got[t] > 0, want > 0, err_msg=f"trial {trial} row {t}: support")
            np.testing.assert_allclose(got[t], want, atol=1e-6, err_msg=f"trial {trial} row {t}")

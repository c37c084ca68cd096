"""The controller's ops against the formulation they replaced (issue 21): the same plan and update
written as Paddle eager ops, as DraftLengthController ran them before, give the same bits on random
controller states (probes, prefills, stopped slots, ties, found at halves)."""

from __future__ import annotations

import numpy as np
import paddle
import pytest

from fastspec.reference.adaptive import controller_rates, update_table
from tests import adaptive_cases as cases


def paddle_plan(a: dict, probe_interval: int) -> np.ndarray:
    """The draft counts of the Paddle-op plan (the probe ring rolled to the op's step)."""
    t = {name: paddle.to_tensor(value) for name, value in a.items()}
    b, cols = a["acceptance"].shape
    estimates = t["acceptance"]
    if probe_interval:
        step = int(a["probe_step"][0]) + 1
        ring = np.zeros((b, cols), np.float32)
        ring[(np.arange(b) - step) % probe_interval == 0, 1] = a["rates"][4]
        estimates = paddle.maximum(estimates, paddle.to_tensor(ring))
    tie = paddle.to_tensor(-(2.0**-22) * np.arange(b, dtype=np.float32)[:, None])
    worth = paddle.cumprod(estimates, dim=1) + tie
    own = paddle.to_tensor(np.eye(1, cols, dtype=np.float32))
    rows = own + (1.0 - own) * t["found"].reshape([b, 1])
    order = paddle.argsort(worth.reshape([-1]), descending=True, stable=True)
    ranked = paddle.gather(worth.reshape([-1]), order)
    ranked_rows = paddle.gather(rows.reshape([-1]), order)
    running = paddle.logical_not(paddle.logical_or(t["stop_flags"], t["is_block_step"]))
    prefill = paddle.sum(paddle.logical_and(running, t["seq_lens_encoder"] > 0).astype("float32"))
    steps_rows = paddle.round(paddle.cumsum(ranked_rows) + prefill).astype("int64")
    cost = t["step_cost"]
    seconds = paddle.gather(cost, paddle.clip(steps_rows - 1, 0, cost.shape[0] - 1))
    rate = (paddle.cumsum(ranked * ranked_rows) + prefill) / seconds
    threshold = paddle.gather(ranked, paddle.argmax(rate))
    return paddle.sum(worth[:, 1:] >= threshold, axis=1, dtype="int32").numpy()


def paddle_observe(a: dict) -> tuple[np.ndarray, np.ndarray]:
    t = {name: paddle.to_tensor(value) for name, value in a.items()}
    b, cols = a["acceptance"].shape
    k = cols - 1
    scale, shift = (paddle.to_tensor(x) for x in update_table(k, a["rates"]))
    cu = t["cu_seqlens_q_output"]
    rows = cu[1:] - cu[:-1]
    found = t["found"].reshape([b, 1])
    tried = t["acceptance"][:, :1] * (t["draft_token_num"].unsqueeze(1) > 0).astype("float32")
    hit = (rows.unsqueeze(1) > 1).astype("float32")
    new_found = found + float(a["rates"][0]) * tried * (hit - found)
    index = paddle.clip(rows * (k + 2) + t["accept_num"], 0, (k + 2) ** 2 - 1)
    index = paddle.where((tried * (1.0 - hit)).squeeze(1) > 0, paddle.full_like(index, (k + 2) ** 2), index)
    updated = t["acceptance"] * paddle.gather(scale, index) + paddle.gather(shift, index)
    return updated.numpy(), new_found.numpy().reshape(-1)


def controller_like(op: str, seed: int) -> list[tuple[dict, dict]]:
    """Random calls with the values a controller holds: flags 0 / 1, estimates in [0, 1]."""
    rng, make = np.random.default_rng(seed), cases.plan_case if op == "adaptive_plan" else cases.observe_case
    out = []
    for arrays, attrs in (make(rng) for _ in range(40)):
        arrays["acceptance"] = np.clip(arrays["acceptance"], 0, 1)
        arrays["acceptance"][:, 0] = arrays["acceptance"][:, 0] > 0  # the decoding flag
        arrays["rates"] = controller_rates(0.3, 0.2, 0.6)
        if op == "adaptive_plan":
            arrays["found"] = np.clip(arrays["found"], 0, 1)
        out.append((arrays, attrs))
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_the_plan_decides_as_the_paddle_formulation(seed):
    for i, (arrays, attrs) in enumerate(controller_like("adaptive_plan", seed)):
        drafts = cases.run_arrays("adaptive_plan", arrays, attrs)[1]
        np.testing.assert_array_equal(drafts, paddle_plan(arrays, attrs["probe_interval"]), err_msg=f"case {i}")


@pytest.mark.parametrize("seed", [1, 2])
def test_the_update_gives_the_bits_of_the_paddle_formulation(seed):
    for i, (arrays, attrs) in enumerate(controller_like("adaptive_observe", seed)):
        acceptance, found = cases.run_arrays("adaptive_observe", arrays, attrs)
        want_acceptance, want_found = paddle_observe(arrays)
        np.testing.assert_array_equal(acceptance, want_acceptance, err_msg=f"case {i}")
        np.testing.assert_array_equal(found, want_found, err_msg=f"case {i}")

"""Step cost models: the roofline's numbers by hand, the measured line's fit."""

import numpy as np
import pytest

from fastspec.runtime.adaptive.cost_model import MeasuredCost, RooflineCost, make_cost_model
from fastspec.runtime.config import AdaptiveConfig


def test_roofline_of_an_8b_model_on_an_h100():
    cost = RooflineCost.named("llama-3.1-8b", "h100-sxm", launch_us=100.0)
    weights = 8.03e9 * 2 / 3.35e12  # 16.06 GB read once at 3.35 TB/s: 4.79 ms
    per_token = 2 * 8.03e9 / 989e12  # 16.2 us of tensor-core time per token
    np.testing.assert_allclose(cost.seconds([1, 256]), 100e-6 + weights, rtol=1e-12)  # memory-bound: flat
    np.testing.assert_allclose(cost.seconds([1024]), 100e-6 + 1024 * per_token, rtol=1e-12)  # compute-bound
    assert cost.ridge_tokens == pytest.approx(weights / per_token) == pytest.approx(295.2, abs=0.1)
    cost.record(10, 1.0)  # a given curve ignores measurements
    assert cost.version == 0 and cost.seconds([1])[0] == pytest.approx(100e-6 + weights)


def test_measured_cost_fits_the_line_of_its_records():
    cost = MeasuredCost(refit_every=5, skip_first=2)
    cost.record(1, 9.0)  # warm-up forwards are skipped
    cost.record(1, 9.0)
    assert cost.version == 0 and cost.seconds([1, 100])[1] == 0.0  # nothing fitted yet
    for tokens in (1, 4, 4, 8, 16):
        cost.record(tokens, 0.002 + 0.0005 * tokens)
    assert cost.version == 1
    assert (cost.intercept, cost.slope) == (pytest.approx(0.002), pytest.approx(0.0005))
    np.testing.assert_allclose(cost.seconds([32]), 0.002 + 0.016)


def test_measured_cost_is_flat_until_two_counts_and_never_slopes_down():
    cost = MeasuredCost(refit_every=2, skip_first=0)
    cost.record(4, 0.01)
    cost.record(4, 0.03)
    assert (cost.intercept, cost.slope) == (pytest.approx(0.02), 0.0)
    cost.record(8, 0.001)  # faster with more tokens: noise, read as flat
    cost.record(8, 0.001)
    assert cost.slope == 0.0 and cost.intercept == pytest.approx((0.02 + 0.001) / 2)


def test_make_cost_model_follows_the_config():
    assert isinstance(make_cost_model(AdaptiveConfig()), MeasuredCost)
    roofline = make_cost_model(
        AdaptiveConfig(cost_model="roofline", target_model="qwen2.5-7b", gpu="a100-sxm", launch_us=0.0)
    )
    assert roofline.seconds([1])[0] == pytest.approx(7.61e9 * 2 / 2.039e12)

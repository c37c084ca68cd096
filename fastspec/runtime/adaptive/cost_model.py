"""Step cost models: the time of one step as a function of the tokens its target forward scores.

The draft-length controller (``fastspec.runtime.adaptive.controller``) weighs the tokens drafts are expected to add
against what they cost; both models here answer ``seconds(tokens)`` for an array of token counts.

- ``RooflineCost``: a given target model on a named GPU. One decode forward reads every weight
  once and does ``2 x parameters`` FLOPs per token, so it takes
  ``launch + max(weight_bytes / bandwidth, 2 x parameters x tokens / peak_flops)``: flat while
  memory-bound (drafts are free), then linear once compute-bound (each token costs as much as a
  decode token). KV-cache reads and attention FLOPs are left out, so the curve is optimistic
  about large batches with long contexts.
- ``MeasuredCost``: the runner's own steps (propose to update), timed by token count; a straight line
  ``intercept + slope x tokens`` fitted by least squares over the mean time of each count.

The numbers: datasheet figures (dense, no sparsity) and the models' published parameter counts;
see docs/performance.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

COST_MODELS = ("measured", "roofline")


@dataclass(frozen=True)
class Gpu:
    """Peak figures of one GPU: HBM bandwidth (bytes/s) and dense BF16 tensor FLOP/s."""

    bandwidth: float
    peak_flops: float


@dataclass(frozen=True)
class TargetModel:
    """A target model's parameter count and bytes per weight (2: BF16)."""

    parameters: float
    bytes_per_parameter: float = 2.0


GPUS = {
    "h100-sxm": Gpu(bandwidth=3.35e12, peak_flops=989e12),  # NVIDIA H100 SXM5 80 GB datasheet
    "h200": Gpu(bandwidth=4.8e12, peak_flops=989e12),  # NVIDIA H200 SXM 141 GB datasheet
    "a100-sxm": Gpu(bandwidth=2.039e12, peak_flops=312e12),  # NVIDIA A100 SXM 80 GB datasheet
}
TARGET_MODELS = {
    "llama-3.1-8b": TargetModel(8.03e9),  # Llama 3.1 8B, BF16
    "qwen2.5-7b": TargetModel(7.61e9),  # Qwen2.5 7B, BF16
}


class StepCostModel(Protocol):
    """What the controller needs: seconds of one forward for each token count, and a version
    that changes whenever the answer may have changed (the controller re-reads it then)."""

    version: int

    def seconds(self, tokens: np.ndarray) -> np.ndarray: ...

    def record(self, tokens: int, seconds: float) -> None:
        """The runner reports each forward it timed (a given curve ignores it)."""


@dataclass
class RooflineCost:
    """``launch + max(weight_bytes / bandwidth, 2 x parameters x tokens / peak_flops)``."""

    parameters: float
    weight_bytes: float
    bandwidth: float
    peak_flops: float
    launch_s: float = 100e-6
    version: int = 0  # fixed: never changes

    @classmethod
    def named(cls, target_model: str, gpu: str, launch_us: float = 100.0) -> RooflineCost:
        """The roofline of ``TARGET_MODELS[target_model]`` on ``GPUS[gpu]``."""
        model, card = TARGET_MODELS[target_model], GPUS[gpu]
        return cls(
            model.parameters,
            model.parameters * model.bytes_per_parameter,
            card.bandwidth,
            card.peak_flops,
            launch_us * 1e-6,
        )

    @property
    def ridge_tokens(self) -> float:
        """Tokens per step where the forward turns compute-bound."""
        return self.weight_bytes / self.bandwidth * self.peak_flops / (2.0 * self.parameters)

    def record(self, tokens: int, seconds: float) -> None:
        """A given curve: measurements change nothing."""

    def seconds(self, tokens: np.ndarray) -> np.ndarray:
        tokens = np.asarray(tokens, dtype=np.float64)
        memory = self.weight_bytes / self.bandwidth
        compute = 2.0 * self.parameters * tokens / self.peak_flops
        return self.launch_s + np.maximum(memory, compute)


@dataclass
class MeasuredCost:
    """A line fitted online to the runner's step times.

    ``record(tokens, seconds)`` after each step (the runner times propose to update); every ``refit_every`` records the line is
    refitted (least squares over the mean time of each token count, so a count seen often does
    not outweigh the others) and ``version`` changes. Before two distinct counts are seen the
    curve is flat at the mean time: drafts look free until the runner has seen what they cost.
    Slope and intercept are kept >= 0.
    """

    refit_every: int = 16
    skip_first: int = 2  # the first steps pay one-time costs (allocation, warm caches)
    intercept: float = 0.0
    slope: float = 0.0
    version: int = 0
    _sums: dict = field(default_factory=dict)  # tokens -> [count, total seconds]
    _seen: int = 0

    def record(self, tokens: int, seconds: float) -> None:
        self._seen += 1
        if self._seen <= self.skip_first or tokens <= 0:
            return
        entry = self._sums.setdefault(int(tokens), [0, 0.0])
        entry[0] += 1
        entry[1] += float(seconds)
        if (self._seen - self.skip_first) % self.refit_every == 0:
            self.refit()

    def refit(self) -> None:
        if not self._sums:
            return
        counts = np.array(sorted(self._sums), dtype=np.float64)
        means = np.array([self._sums[int(t)][1] / self._sums[int(t)][0] for t in counts])
        slope, intercept = np.polyfit(counts, means, 1) if len(counts) >= 2 else (0.0, means[0])
        if slope <= 0:  # noise, or one count only: flat at the mean
            slope, intercept = 0.0, np.mean(means)
        self.slope, self.intercept = float(slope), max(float(intercept), 0.0)
        self.version += 1

    def seconds(self, tokens: np.ndarray) -> np.ndarray:
        return self.intercept + self.slope * np.asarray(tokens, dtype=np.float64)


def make_cost_model(adaptive) -> StepCostModel:
    """The cost model an ``AdaptiveConfig`` names."""
    if adaptive.cost_model == "roofline":
        return RooflineCost.named(adaptive.target_model, adaptive.gpu, adaptive.launch_us)
    return MeasuredCost()

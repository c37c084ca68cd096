"""The demo's adaptive column: spec off, fixed K and the adaptive draft length side by side.

The adaptive run uses the config's ``adaptive`` section switched on (configs/ngram.yaml keeps the
defaults: the measured cost, i.e. the runner's own steps on this machine, fitted online).
"""

from __future__ import annotations

from fastspec.demo.columns import side_by_side
from fastspec.runtime.adaptive.cost_model import MeasuredCost


def adaptive_config(config):
    """``config`` with the draft-length controller on."""
    return config.replace(adaptive={"enabled": True})


def measured_cost(config) -> MeasuredCost | None:
    """The cost model the demo hands the runner when the config measures (so it can show the fit)."""
    return MeasuredCost() if config.adaptive.cost_model == "measured" else None


def comparison_table(off, fixed, adaptive, k: int, check_text: str, cost: MeasuredCost | None = None) -> str:
    """Spec off | fixed K | adaptive: steps, accepted length, drafts verified, wall time, lossless."""
    notes = [("lossless check", f"adaptive: {check_text}")]
    if isinstance(cost, MeasuredCost):
        notes.append(
            (
                "step cost (measured)",
                f"{1e3 * cost.intercept:.2f} ms + {1e3 * cost.slope:.3f} ms per token, fitted to this machine's steps",
            )
        )
    return side_by_side(("spec off", f"fixed K = {k}", "adaptive"), (off, fixed, adaptive), notes)

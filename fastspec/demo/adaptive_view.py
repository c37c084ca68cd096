"""The demo's adaptive column: spec off, fixed K and the adaptive draft length side by side.

The adaptive run uses the config's ``adaptive`` section switched on (configs/ngram.yaml keeps the
defaults: the measured cost, i.e. the runner's own steps on this machine, fitted online).
"""

from __future__ import annotations

from fastspec.runtime.adaptive.cost_model import MeasuredCost


def adaptive_config(config):
    """``config`` with the draft-length controller on."""
    return config.replace(adaptive={"enabled": True})


def measured_cost(config) -> MeasuredCost | None:
    """The cost model the demo hands the runner when the config measures (so it can show the fit)."""
    return MeasuredCost() if config.adaptive.cost_model == "measured" else None


def drafts_per_step(stats) -> float:
    """Drafts verified per decode request-step."""
    return stats.proposed_tokens / stats.decode_request_steps if stats.decode_request_steps else 0.0


def comparison_table(off, fixed, adaptive, k: int, check_text: str, cost: MeasuredCost | None = None) -> str:
    """Spec off | fixed K | adaptive: steps, accepted length, drafts verified, wall time, lossless."""
    ms = lambda r: f"{1000.0 * r.stats.wall_time / max(r.stats.generated_tokens, 1):.2f} ms"  # noqa: E731
    runs = (off, fixed, adaptive)
    rows = [
        ("steps (model forwards)", *(f"{r.stats.steps}" for r in runs)),
        ("mean accepted length", *(f"{r.stats.mean_accepted_length:.2f}" for r in runs)),
        ("drafts per decode step", *(f"{drafts_per_step(r.stats):.2f}" for r in runs)),
        ("draft acceptance rate", "-", *(f"{r.stats.draft_acceptance_rate:.2f}" for r in runs[1:])),
        ("wall time per token", *(ms(r) for r in runs)),
    ]
    heads = ("", "spec off", f"fixed K = {k}", "adaptive")
    widths = [max(len(row[i]) for row in rows + [heads]) for i in range(4)]
    line = lambda cells: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))  # noqa: E731
    lines = [line(heads), "-" * (sum(widths) + 6)] + [line(row) for row in rows]
    lines.append(f"{'lossless check':<{widths[0]}}  adaptive: {check_text}")
    if isinstance(cost, MeasuredCost):
        lines.append(f"{'step cost (measured)':<{widths[0]}}  {1e3 * cost.intercept:.2f} ms + "
                     f"{1e3 * cost.slope:.3f} ms per token, fitted to this machine's steps")
    return "\n".join(lines)

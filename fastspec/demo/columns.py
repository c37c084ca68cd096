"""Runs side by side, one column each: the demo's comparisons (adaptive draft length, draft trees)."""

from __future__ import annotations

from typing import Sequence


def drafts_per_step(stats) -> float:
    """Drafts verified per decode request-step."""
    return stats.proposed_tokens / stats.decode_request_steps if stats.decode_request_steps else 0.0


def side_by_side(heads: Sequence[str], runs: Sequence, notes: Sequence[tuple[str, str]] = ()) -> str:
    """A table: steps, accepted length, drafts verified, acceptance, wall time per token, one column per run
    (the first one spec off), then ``notes`` as (label, text) lines."""
    ms = lambda r: f"{1000.0 * r.stats.wall_time / max(r.stats.generated_tokens, 1):.2f} ms"  # noqa: E731
    rows = [
        ("steps (model forwards)", *(f"{r.stats.steps}" for r in runs)),
        ("mean accepted length", *(f"{r.stats.mean_accepted_length:.2f}" for r in runs)),
        ("drafts per decode step", *(f"{drafts_per_step(r.stats):.2f}" for r in runs)),
        ("draft acceptance rate", "-", *(f"{r.stats.draft_acceptance_rate:.2f}" for r in runs[1:])),
        ("wall time per token", *(ms(r) for r in runs)),
    ]
    heads = ("", *heads)
    widths = [max(len(row[i]) for row in rows + [heads]) for i in range(len(heads))]
    line = lambda cells: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))  # noqa: E731
    lines = [line(heads), "-" * (sum(widths) + 2 * len(widths))] + [line(row) for row in rows]
    lines += [f"{label:<{widths[0]}}  {text}" for label, text in notes]
    return "\n".join(lines)

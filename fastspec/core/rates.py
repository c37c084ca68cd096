"""The adaptive ops' ``rates`` input (docs/ops/adaptive.md): the draft-length controller's settings,
laid out once for the runtime's controller and the reference."""

from __future__ import annotations

# rates[i]: each a float32 rounded once from double
LEARNING_RATE, KEEP_TRIED, KEEP_UNTRIED, RELAX_SHIFT, PRIOR = range(5)


def controller_rates(learning_rate: float, relax_rate: float, prior: float) -> tuple[float, ...]:
    """The five settings in ``rates`` order, in double: learning_rate, 1 - learning_rate, 1 - relax_rate,
    relax_rate * prior, prior. The caller rounds each to float32 once."""
    return (learning_rate, 1.0 - learning_rate, 1.0 - relax_rate, relax_rate * prior, prior)

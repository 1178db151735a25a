"""What a passing gate could have missed: the smallest drop of a metric its score-drop check catches
90 % of the time.

A PASS says "no significant drop beyond the tolerance"; how large a drop could hide behind it
depends on the run's n and on how much the metric's paired differences move when nothing changed
(judge noise, an agent's nondeterminism). `detectable_drop` states it from the run's own figures,
per gated metric, so a team reads a pass as "a drop of 0.17 or more in answer correctness would have
failed this gate 9 times in 10".

Definition. The score-drop check fails when the mean worsening d̄ over the n pairs exceeds both the
tolerance and its significance bound, the family's critical value z* times the sign-flip null sd
√(Σd²)/n. Under a drop δ, d̄ ≈ N(δ, (m₂ + δw − δ²)/n) and Σd²/n ≈ m₂ + δw, where m₂ is the run's
mean squared paired change and w the metric's range: the drop is taken to fall on as few items as
possible, each losing the whole range, which raises the spread the most (a 0/1 metric's drop flips
items from 1 to 0). The detectable drop is the smallest δ with

    δ − z₀.₉₀ · √((m₂ + δw − δ²)/n) ≥ max(tolerance, z* · √((m₂ + δw)/n)),

by bisection. z* is the first step of Westfall–Young's maxT: the (1 − α) quantile of the null
maximum over every check of the gate, the bound a lone regressed metric faces (later steps are
lower). Both choices make the figure conservative; the normal approximation is the rest. `ragwatch
bench gate --detectable` measures the power the gate reaches at the drops it states
(docs/explanation/statistics.md).
"""

from __future__ import annotations

import math
from statistics import NormalDist

DETECTABLE_POWER = 0.90
_BISECTIONS = 40


def detectable_drop(
    mean_square: float,
    n: int,
    width: float,
    critical_z: float,
    tolerance: float,
    *,
    power: float = DETECTABLE_POWER,
) -> float | None:
    """The smallest worsening of the mean that the score-drop check fails with probability ≥ `power`
    (module docstring); None when even a drop of the whole range would not be caught that often."""
    if n < 1 or width <= 0:
        return None
    z_power = NormalDist().inv_cdf(power)

    def caught(drop: float) -> bool:
        spread = mean_square + drop * width
        return drop - z_power * math.sqrt(max(spread - drop**2, 0.0) / n) >= max(
            tolerance, critical_z * math.sqrt(spread / n)
        )

    if not caught(width):
        return None
    low, high = 0.0, width
    for _ in range(_BISECTIONS):
        middle = (low + high) / 2.0
        low, high = (low, middle) if caught(middle) else (middle, high)
    return high

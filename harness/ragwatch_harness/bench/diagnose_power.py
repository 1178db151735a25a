"""What the diagnosis finds: how often a stratum that is really worse is flagged, and a healthy one
is not.

A simulated offline run: 12 strata × 30 items of faithfulness, eleven healthy (true means spread
over 0.88–0.90) and one worse (0.74 by default: 15 points below the healthy ones), put through
`stats.aggregate` and `diagnose` exactly as a run is. Per scenario it counts the runs in which

- the worse stratum is *flagged*: its finding states "problem" or "watch" (a band established,
  possibly a weaker one than its estimate's, see `diagnose.ladder`); and states "problem" (< 0.75)
  itself;
- some healthy stratum gets a problem or watch finding: a *false flag* (true mean in the healthy
  band);

under each of the diagnosis' corrections (`RAGWATCH_DIAGNOSIS_CORRECTION`), on the same simulated
runs: Benjamini–Hochberg over the run's band claims (the default), and none, where a claim stands
exactly when its printed 95 % interval clears the edge — the ceiling of any correction that keeps a
claim consistent with its interval.

Scenarios beside the main one: the worse stratum at 0.73 and 0.75; all twelve healthy (false flags
with nothing to find); all twelve exactly at the healthy edge 0.85, and eleven there beside the
worse one: the hardest cases for false flags (at 0.85 the mean is healthy, yet half the estimates
fall below it).

Faithfulness is a share of supported claims per answer, so per item it has a point mass at 1.0 and a
spread below. Two score models, each with the stratum's true mean:
- `mixture`: a share of answers fully supported (1.0), the rest Beta(1.5, 1.5) (mean 0.5, wide);
- `claims`: 1 + Poisson(3) claims per answer, each supported with the answer's own probability drawn
  from Beta(3μ, 3(1 − μ)): faithfulness = supported / claims (46 % of answers at 1.0 when μ = 0.74).
Both put the worse stratum's per-item sd near 0.31, a healthy one's near 0.23.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from rich.console import Console
from rich.table import Table

from pipelines.evaluation.statistics.aggregates import aggregate
from pipelines.evaluation.statistics.diagnose import UNCORRECTED, diagnose
from pipelines.evaluation.statistics.intervals import proportion_ci
from pipelines.evaluation.statistics.multiplicity import BENJAMINI_HOCHBERG

METRIC = "faithfulness"
STRATA = 12
ITEMS = 30
HEALTHY = (0.88, 0.90)
WORSE = 0.74
EDGE = 0.85
"""faithfulness' healthy edge: ≥ 0.85 is healthy."""
FLAGS = ("problem", "watch")
CORRECTIONS = (BENJAMINI_HOCHBERG, UNCORRECTED)

ScoreModel = Callable[[np.random.Generator, float, int], np.ndarray]


class _Score(NamedTuple):
    """What `stats.aggregate` reads of a score (stats.ScoreLike), without a pydantic model per
    item."""

    item_id: str
    stratum: str
    metric: str
    value: float
    status: str


def mixture_scores(rng: np.random.Generator, mean: float, n: int) -> np.ndarray:
    """A share 2·mean − 1 of answers at 1.0, the rest Beta(1.5, 1.5): true mean `mean` (≥ 0.5)."""
    fully = 2.0 * mean - 1.0
    return np.where(rng.random(n) < fully, 1.0, rng.beta(1.5, 1.5, n))


def claim_scores(rng: np.random.Generator, mean: float, n: int) -> np.ndarray:
    """Supported / claims, 1 + Poisson(3) claims per answer, each answer's support rate ~ Beta(3μ,
    3(1 − μ))."""
    claims = 1 + rng.poisson(3.0, n)
    rate = rng.beta(3.0 * mean, 3.0 * (1.0 - mean), n)
    return rng.binomial(claims, rate) / claims


MODELS: dict[str, ScoreModel] = {"mixture": mixture_scores, "claims": claim_scores}


class Scenario(NamedTuple):
    name: str
    means: tuple[float, ...]
    """True mean per stratum; the last stratum is the worse one when `worse` is set."""
    worse: bool


def scenarios(
    *, strata: int = STRATA, healthy: tuple[float, float] = HEALTHY, worse: float = WORSE
) -> list[Scenario]:
    spread = tuple(float(m) for m in np.linspace(*healthy, strata - 1))
    return [
        Scenario(f"one at {worse:.2f}", (*spread, worse), True),
        *(Scenario(f"one at {w:.2f}", (*spread, w), True) for w in (worse - 0.01, worse + 0.01)),
        Scenario("all healthy", tuple(float(m) for m in np.linspace(*healthy, strata)), False),
        Scenario(f"all at {EDGE:.2f}", (EDGE,) * strata, False),
        Scenario(
            f"{strata - 1} at {EDGE:.2f}, one at {worse:.2f}",
            (EDGE,) * (strata - 1) + (worse,),
            True,
        ),
    ]


def simulate(
    model: ScoreModel, scenario: Scenario, *, reps: int, items: int = ITEMS, seed: int = 0
) -> dict:
    """Counts over `reps` simulated runs of one scenario, per correction (the same runs for
    each)."""
    rng = np.random.default_rng(seed)
    names = [f"s{i:02d}" for i in range(len(scenario.means))]
    worse = names[-1] if scenario.worse else None
    counts = {
        c: {"flagged": 0, "problem": 0, "inconclusive": 0, "false_flag": 0} for c in CORRECTIONS
    }
    for _ in range(reps):
        scores = [
            _Score(f"{name}-{j}", name, METRIC, float(value), "ok")
            for name, mean in zip(names, scenario.means)
            for j, value in enumerate(model(rng, mean, items))
        ]
        aggregates = aggregate(scores)
        for correction, count in counts.items():
            severity = {
                f.stratum: f.severity
                for f in diagnose(aggregates, correction=correction)
                if f.metric == METRIC
            }
            if worse is not None:
                count["flagged"] += severity.get(worse) in FLAGS
                count["problem"] += severity.get(worse) == "problem"
                count["inconclusive"] += severity.get(worse) == "inconclusive"
            count["false_flag"] += any(
                severity.get(name) in FLAGS for name in names if name != worse
            )
    return counts


def run_diagnose_bench(
    *,
    reps: int = 1000,
    seed: int = 17,
    items: int = ITEMS,
    strata: int = STRATA,
    models: tuple[str, ...] = tuple(MODELS),
) -> dict:
    """Every scenario under every score model, `reps` runs each (the same seed per cell)."""
    rows = []
    for model in models:
        for scenario in scenarios(strata=strata):
            started = time.perf_counter()
            counts = simulate(MODELS[model], scenario, reps=reps, items=items, seed=seed)
            seconds = time.perf_counter() - started
            rows += [
                {
                    "model": model,
                    "scenario": scenario.name,
                    "worse": scenario.worse,
                    "correction": correction,
                    **count,
                    "seconds": seconds,
                }
                for correction, count in counts.items()
            ]
    return {"reps": reps, "seed": seed, "items": items, "strata": strata, "rows": rows}


def format_diagnose_bench(result: dict) -> str:
    """One row per score model and scenario, within 80 columns."""
    reps = result["reps"]

    def rate(count: int) -> str:
        low, high = proportion_ci(count, reps)
        share = count / reps
        return f"{share:.1%} ±{max(high - share, share - low) * 100:.1f}"

    console = Console(file=io.StringIO(), width=80)
    for correction in CORRECTIONS:
        table = Table(
            title=f"Diagnosis ({correction}), {result['strata']} strata × {result['items']} items, {reps} runs per row"
        )
        for column in ("scores", "strata", "worse flagged", "as problem", "false flags"):
            table.add_column(column, justify="left" if column in ("scores", "strata") else "right")
        for row in (r for r in result["rows"] if r["correction"] == correction):
            worse = [rate(row[k]) for k in ("flagged", "problem")] if row["worse"] else ["—"] * 2
            table.add_row(row["model"], row["scenario"], *worse, rate(row["false_flag"]))
        console.print(table)
    console.print(
        "Both tables score the same simulated runs. Healthy strata's true means are spread over "
        "0.88–0.90 unless at the edge 0.85 (healthy). Worse flagged: the worse stratum's finding is a "
        "problem or a watch (the strongest band its interval establishes); false flags: runs in which "
        "any healthy stratum got one. Correction none: a claim stands exactly when its printed 95 % "
        "interval clears the edge (RAGWATCH_DIAGNOSIS_CORRECTION=none). ±: the wider side of the "
        "rate's 95 % Jeffreys interval."
    )
    return console.file.getvalue()

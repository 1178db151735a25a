"""Is the judge-corrected mean right when quality moves? Coverage and width of each interval, simulated.

A judge that says yes to a truly-yes item with probability sens and no to a truly-no one with probability
spec. Every run judges N items (2,000 by default); each of the earlier labelled runs (5) queues as many items
per verdict for people to label (15 + 15: 150 labels), as the audit queue does; the run being reported has no
label yet (its queue is labelled days later). Its true mean is the mean of its N items' truth. Per scenario,
over `reps` simulated runs, each 95 % interval's coverage of that true mean and its mean half-width:

- judge-only: the run's verdicts taken as truth;
- human-only: the labels' own mean, each weighted to its run's verdict mix — it describes the labelled runs;
- PPI λ = 1, verdict-weighted (the estimator this one replaced): ppi_py's `ppi_mean_ci` on the earlier labels,
  weighted to this run's verdict mix;
- corrected (statistics/misclassification.py): Rogan–Gladen with sens and spec from the earlier labels, and the
  error-rate shift test between the earlier and later labelled runs; withheld when the test rejects or the
  judge is not shown better than a coin. Its coverage counts the runs it gave an interval; "given" says how many.

Scenarios: no shift (true mean 0.7 on every run); a quality shift (0.7 on the labelled runs, 0.5 or 0.9 on
this one, the judge unchanged); a judge whose error rates moved between labelled runs (sens 0.95 → 0.75 from
the third labelled run on, and on this run; 0.7 → 0.5); a judge that changed on this run only (no label of it
yet: the stated limit of the method).
"""

from __future__ import annotations

import io
import time
import warnings
from typing import NamedTuple

import numpy as np
from rich.console import Console
from rich.table import Table
from scipy.stats import norm

from pipelines.evaluation.statistics.intervals import proportion_ci
from pipelines.evaluation.statistics.misclassification import error_rate_shift, error_rates, label_weights, rogan_gladen

JUDGED = 2000
RUNS = 5
PER_VERDICT = 15
SENS, SPEC = 0.95, 0.85
"""The judge of the existing test: 5 % false negatives, 15 % false positives."""
ESTIMATORS = ("judge-only", "human-only", "PPI λ=1 (before)", "corrected")
"""The intervals compared; "corrected" is the product's (judge_agreement.calibrate)."""
Z = norm.ppf(0.975)


class Scenario(NamedTuple):
    name: str
    labelled_means: tuple[float, ...]
    """True mean of each earlier labelled run, oldest first."""
    labelled_rates: tuple[tuple[float, float], ...]
    """(sens, spec) of the judge on each earlier labelled run."""
    mean: float
    rates: tuple[float, float]
    """The reported run's true mean and its judge's (sens, spec)."""


def scenarios(runs: int = RUNS, sens: float = SENS, spec: float = SPEC) -> list[Scenario]:
    same, moved = ((sens, spec),) * runs, ((sens, spec),) * 2 + ((sens - 0.2, spec),) * (runs - 2)
    return [
        Scenario("no shift (0.7)", (0.7,) * runs, same, 0.7, (sens, spec)),
        Scenario("quality 0.7 → 0.5", (0.7,) * runs, same, 0.5, (sens, spec)),
        Scenario("quality 0.7 → 0.9", (0.7,) * runs, same, 0.9, (sens, spec)),
        Scenario("judge moved on the labelled runs, 0.7 → 0.5", (0.7,) * runs, moved, 0.5, (sens - 0.2, spec)),
        Scenario("judge moved on this run only, 0.7 → 0.5", (0.7,) * runs, same, 0.5, (sens - 0.2, spec)),
    ]


def _judge(rng: np.random.Generator, mean: float, rates: tuple[float, float], n: int) -> tuple[np.ndarray, np.ndarray]:
    truth = (rng.random(n) < mean).astype(int)
    sens, spec = rates
    verdicts = np.where(truth == 1, rng.random(n) < sens, rng.random(n) >= spec).astype(int)
    return truth, verdicts


def one_run(
    rng: np.random.Generator, scenario: Scenario, *, judged: int = JUDGED, per_verdict: int = PER_VERDICT
) -> dict[str, tuple[float, float] | None]:
    """Every estimator's interval for one simulated reported run, and its true mean under key "truth"."""
    human, verdicts, runs, shares = [], [], [], {}
    for r, (mean, rates) in enumerate(zip(scenario.labelled_means, scenario.labelled_rates)):
        truth, said = _judge(rng, mean, rates, judged)
        shares[f"r{r}"] = float(said.mean())
        for v in (0, 1):
            picked = rng.choice(np.flatnonzero(said == v), min(per_verdict, int((said == v).sum())), replace=False)
            human += truth[picked].tolist()
            verdicts += [v] * len(picked)
            runs += [f"r{r}"] * len(picked)
    truth, said = _judge(rng, scenario.mean, scenario.rates, judged)
    y, f = np.asarray(human), np.asarray(verdicts)
    q = float(said.mean())
    out: dict = {"truth": (float(truth.mean()),) * 2}
    half = Z * np.sqrt(q * (1 - q) / judged)
    out["judge-only"] = (q - half, q + half)
    out["human-only"] = _human_only(y, f, runs, shares)
    out["PPI λ=1 (before)"] = _ppi_lambda_one(y, f, said)
    rates = error_rates(y, f, runs, shares)
    shift = error_rate_shift(y, f, runs, runs, shares)
    corrected = rogan_gladen(q, judged, rates) if rates is not None and not shift.moved else None
    out["corrected"] = corrected.ci if corrected is not None else None
    out["shift tested"] = (float(shift.p_value is not None),) * 2
    return out


def _human_only(y: np.ndarray, f: np.ndarray, runs: list[str], shares: dict[str, float]) -> tuple[float, float]:
    """The weighted mean of the labels, stratified (run, verdict) variance."""
    w = label_weights(f, runs, shares)
    mean = float((w * y).sum() / w.sum())
    groups, variance = np.asarray(runs), 0.0
    for run in set(runs):
        for v in (0, 1):
            s = (groups == run) & (f == v)
            if s.sum() > 1:
                variance += s.sum() * (w[s][0] / w.sum()) ** 2 * y[s].var(ddof=1)
    half = Z * np.sqrt(variance)
    return mean - half, mean + half


def previous_weights(labelled_verdicts: np.ndarray, judged_verdicts: np.ndarray) -> np.ndarray:
    """The previous code's weights (its judge_agreement.verdict_weights): every label, whatever its run, weighted
    by this run's share of its verdict / its share among the labels — P(truth | verdict) carried over."""
    weights = np.ones(len(labelled_verdicts))
    for v in (0, 1):
        in_sample = (labelled_verdicts == v).mean()
        if in_sample > 0:
            weights[labelled_verdicts == v] = (judged_verdicts == v).mean() / in_sample
    return weights


def _ppi_lambda_one(y: np.ndarray, f: np.ndarray, judged: np.ndarray) -> tuple[float, float]:
    """The previous calibrate's interval, exactly: ppi_py with λ = 1, labels weighted to this run's verdict mix."""
    # ppi_py's import calls warnings.simplefilter("ignore"): contained, as the previous calibrate did.
    with warnings.catch_warnings():
        from ppi_py import ppi_mean_ci

        low, high = ppi_mean_ci(
            y.astype(float), f.astype(float), judged.astype(float), alpha=0.05, w=previous_weights(f, judged), lam=1.0
        )
    return float(np.ravel(low)[0]), float(np.ravel(high)[0])


def simulate(
    scenario: Scenario, *, reps: int, seed: int = 0, judged: int = JUDGED, per_verdict: int = PER_VERDICT
) -> dict[str, dict[str, float]]:
    """Per estimator: runs with an interval, coverage among them, mean half-width."""
    rng = np.random.default_rng(seed)
    tally = {name: {"given": 0, "covered": 0, "half_width": 0.0} for name in ESTIMATORS}
    tested = 0
    for _ in range(reps):
        out = one_run(rng, scenario, judged=judged, per_verdict=per_verdict)
        truth = out["truth"][0]
        tested += out["shift tested"][0] > 0
        for name in ESTIMATORS:
            if out[name] is None:
                continue
            low, high = max(0.0, out[name][0]), min(1.0, out[name][1])
            tally[name]["given"] += 1
            tally[name]["covered"] += low <= truth <= high
            tally[name]["half_width"] += (high - low) / 2
    for row in tally.values():
        row["half_width"] = row["half_width"] / row["given"] if row["given"] else float("nan")
    return {"estimators": tally, "tested": tested}


def run_judge_shift_bench(
    *, reps: int = 1000, seed: int = 29, judged: int = JUDGED, per_verdict: int = PER_VERDICT
) -> dict:
    rows = []
    for scenario in scenarios():
        started = time.perf_counter()
        result = simulate(scenario, reps=reps, seed=seed, judged=judged, per_verdict=per_verdict)
        rows.append({"scenario": scenario.name, **result, "seconds": time.perf_counter() - started})
    return {"reps": reps, "seed": seed, "judged": judged, "labels": RUNS * 2 * per_verdict, "rows": rows}


def format_judge_shift_bench(result: dict) -> str:
    reps = result["reps"]
    console = Console(file=io.StringIO(), width=80)
    table = Table(
        title=f"The run's mean of a 0/1 metric: N = {result['judged']} judged, {result['labels']} labels "
        f"from {RUNS} earlier runs, {reps} runs per scenario"
    )
    for column in ("scenario", "interval", "given", "coverage", "± half"):
        table.add_column(column, justify="left" if column in ("scenario", "interval") else "right")
    for row in result["rows"]:
        for name in ESTIMATORS:
            cell = row["estimators"][name]
            given = cell["given"]
            if given:
                low, high = proportion_ci(cell["covered"], given)
                share = cell["covered"] / given
                coverage = f"{share:.1%} ±{max(high - share, share - low) * 100:.1f}"
            else:
                coverage = "—"
            table.add_row(
                row["scenario"] if name == ESTIMATORS[0] else "",
                name,
                f"{given / reps:.0%}",
                coverage,
                f"{cell['half_width']:.3f}" if given else "—",
            )
        table.add_section()
    console.print(table)
    console.print(
        "Coverage: share of the runs given an interval whose 95 % interval holds the run's true mean (±: "
        "the wider side of its 95 % Jeffreys interval). Corrected: withheld when the earlier and later "
        "labelled runs' error rates differ (χ² test, p < 0.05) or the judge is not shown better than a "
        "coin. Human-only describes the labelled runs, not this one."
    )
    return console.file.getvalue()

"""Is the judge-corrected mean right, and never worse than the labels alone? Coverage and width,
simulated.

A judge says yes to a truly-yes item with probability sens and no to a truly-no one with probability
spec. Every run judges N items; its true mean is the mean of its N items' truth. Labels come, as the
audit queue draws them, in equal numbers per verdict, either of the run's own items (same day) or of
5 earlier runs (the run's own queue is labelled days later). All 1,000 runs of a cell are drawn at
once (numpy): the (verdict, truth) counts of a run are one multinomial draw and each stratum's
labelled truth one hypergeometric draw.

Intervals, 95 %:
- judge-only: the run's verdicts taken as truth;
- labels-only: the labels weighted to their runs' verdict mixes — of the run itself on the same day
  (MOVER-Jeffreys); of the labelled runs, not this one, on an earlier day (stratified score
  interval: a handful of labels per stratum);
- corrected (statistics/misclassification.py), as the product computes it: the same-day labels'
  stratified mean; Rogan–Gladen from earlier days' labels, its interval from the posterior of the
  error rates (the later labelled runs' when the error-rate shift test rejects, stretched to hold
  every run's), withheld when the judge is not shown better than a coin or the test cannot run. Its
  coverage counts the runs it gave an interval; "given" says how many.
"""

from __future__ import annotations

import io
import time
from dataclasses import replace
from typing import NamedTuple

import numpy as np
from rich.console import Console
from rich.table import Table
from scipy.stats import chi2, norm

from pipelines.evaluation.statistics.intervals import proportion_ci
from pipelines.evaluation.statistics.misclassification import (
    COIN_ALPHA,
    SHIFT_ALPHA,
    Strata,
    _rates,
    after_a_shift,
    judge_beats_coin,
    labels_for_half_width,
    own_labels,
    rogan_gladen,
)
from ragwatch_harness.bench.pooled_labels import score_interval

JUDGED = 2000
EARLIER_RUNS = 5
SENS, SPEC = 0.9, 0.9
MEANS = (0.1, 0.3, 0.5, 0.7, 0.9)
LABELS = (30, 60, 150)
ORIGINS = ("same day", "earlier days")
ESTIMATORS = ("judge-only", "labels-only", "corrected")
Z = norm.ppf(0.975)


class Cell(NamedTuple):
    name: str
    origin: str
    labels: int
    mean: float
    rates: tuple[float, float]
    labelled_means: tuple[float, ...] = ()
    labelled_rates: tuple[tuple[float, float], ...] = ()


def grid(sens: float = SENS, spec: float = SPEC) -> list[Cell]:
    return [
        Cell(
            f"p {p}",
            origin,
            n,
            p,
            (sens, spec),
            (p,) * EARLIER_RUNS,
            ((sens, spec),) * EARLIER_RUNS,
        )
        for origin in ORIGINS
        for n in LABELS
        for p in MEANS
    ]


def shifts(labels: int = 150, sens: float = 0.95, spec: float = 0.85) -> list[Cell]:
    """Earlier days' labels when quality or the judge moves (a judge with 5 % false negatives, 15 %
    false positives; the earlier runs at 0.7)."""
    same, moved = (
        ((sens, spec),) * EARLIER_RUNS,
        ((sens, spec),) * 2 + ((sens - 0.2, spec),) * (EARLIER_RUNS - 2),
    )
    early = (0.7,) * EARLIER_RUNS
    return [
        Cell("no shift, 0.7", "earlier days", labels, 0.7, (sens, spec), early, same),
        Cell("quality 0.7 → 0.5", "earlier days", labels, 0.5, (sens, spec), early, same),
        Cell("quality 0.7 → 0.9", "earlier days", labels, 0.9, (sens, spec), early, same),
        Cell(
            "sens 0.95 → 0.75 from the 3rd labelled run",
            "earlier days",
            labels,
            0.5,
            (sens - 0.2, spec),
            early,
            moved,
        ),
        Cell(
            "sens 0.95 → 0.75 on this run only",
            "earlier days",
            labels,
            0.5,
            (sens - 0.2, spec),
            early,
            same,
        ),
    ]


def _judge(rng, reps: int, mean: float, rates: tuple[float, float], judged: int):
    """Per run, (judged, truly yes) per verdict (no, yes), and the run's true mean."""
    sens, spec = rates
    cells = rng.multinomial(
        judged, [mean * sens, (1 - mean) * (1 - spec), mean * (1 - sens), (1 - mean) * spec], reps
    )
    yes_yes, yes_no, no_yes, no_no = cells.T
    per_verdict = np.stack([no_yes + no_no, yes_yes + yes_no], -1)
    truly_yes = np.stack([no_yes, yes_yes], -1)
    return per_verdict, truly_yes, (yes_yes + no_yes) / judged


def _label(rng, per_verdict, truly_yes, each: int):
    labelled = np.minimum(each, per_verdict)
    return rng.hypergeometric(truly_yes, per_verdict - truly_yes, labelled), labelled


def _earlier(rng, cell: Cell, reps: int, judged: int):
    """Strata (run, verdict) of the earlier runs' labels, shape (reps, 2·runs), and the runs' judged
    counts."""
    each = max(1, cell.labels // (2 * len(cell.labelled_means)))
    columns = []
    for mean, rates in zip(cell.labelled_means, cell.labelled_rates):
        per_verdict, truly_yes, _ = _judge(rng, reps, mean, rates, judged)
        yes, labelled = _label(rng, per_verdict, truly_yes, each)
        columns.append((yes, labelled, per_verdict))
    yes, labelled, per_verdict = (np.concatenate(c, -1) for c in zip(*columns))
    runs = len(cell.labelled_means)
    run_labels = np.repeat(labelled.reshape(reps, runs, 2).sum(-1), 2, -1)
    strata = Strata(
        yes=yes.astype(float),
        labelled=labelled.astype(float),
        share=per_verdict / judged,
        verdict=np.tile([0.0, 1.0], runs),
        run_labels=run_labels.astype(float),
    )
    return strata, per_verdict


def _subset(strata: Strata, columns: slice) -> Strata:
    return Strata(
        *(
            getattr(strata, f)[..., columns]
            for f in ("yes", "labelled", "share", "verdict", "run_labels")
        )
    )


def _shift_test(strata: Strata) -> tuple[np.ndarray, np.ndarray, slice]:
    """(tested, moved, the later half's columns): misclassification.error_rate_shift over equal
    runs, the halves cut at the run boundary nearest half the labels (the first of two as near)."""
    runs = strata.yes.shape[-1] // 2
    cut = min(range(1, runs), key=lambda k: abs(k - runs / 2))
    early, late = (
        _rates(_subset(strata, slice(0, 2 * cut))),
        _rates(_subset(strata, slice(2 * cut, None))),
    )
    diff = np.stack([early.sens - late.sens, early.spec - late.spec], -1)
    cov = early.cov + late.cov
    # A half with no truly-yes or no truly-no label cannot be compared: untested, and the product
    # withholds.
    tested = np.isfinite(diff).all(-1) & np.isfinite(cov).all((-2, -1))
    cov, diff = (
        np.where(tested[..., None, None], cov, np.eye(2)),
        np.where(tested[..., None], diff, 0.0),
    )
    statistic = np.einsum("...i,...ij,...j->...", diff, np.linalg.pinv(cov), diff)
    return tested, tested & (chi2.sf(statistic, 2) < SHIFT_ALPHA), slice(2 * cut, None)


def simulate(cell: Cell, *, reps: int, rng: np.random.Generator, judged: int = JUDGED) -> dict:
    """Every estimator's interval for `reps` simulated runs of the cell, and the runs' true
    means."""
    per_verdict, truly_yes, truth = _judge(rng, reps, cell.mean, cell.rates, judged)
    q = per_verdict[:, 1] / judged
    half = Z * np.sqrt(q * (1 - q) / judged)
    out = {"truth": truth, "judge-only": (q - half, q + half)}
    if cell.origin == "same day":
        yes, labelled = _label(rng, per_verdict, truly_yes, cell.labels // 2)
        corrected = own_labels(yes, labelled, per_verdict)
        out["labels-only"] = corrected.ci
        out["corrected"] = corrected.ci
        out["given"] = np.ones(reps, dtype=bool)
        out["model"] = corrected
        return out
    strata, earlier_judged = _earlier(rng, cell, reps, judged)
    runs = len(cell.labelled_means)
    _, low, high = score_interval(strata.yes, strata.labelled, strata.share / runs, earlier_judged)
    out["labels-only"] = (low, high)
    tested, moved, later_columns = _shift_test(strata)
    later = _subset(strata, later_columns)
    corrected = _correct(q, judged, strata, later, moved)
    beats_coin = np.where(moved, judge_beats_coin(later), judge_beats_coin(strata)) < COIN_ALPHA
    low, high = corrected.ci
    given = tested & beats_coin & np.isfinite(low) & np.isfinite(high)
    out["corrected"], out["given"], out["model"] = (low, high), given, corrected
    out["moved"] = moved
    return out


def _correct(q, judged: int, strata: Strata, later: Strata, moved: np.ndarray):
    """Rogan–Gladen per run from every labelled run's labels, or, where the shift test rejected,
    from the later runs' (misclassification.after_a_shift; computed for those runs alone: the
    posterior is the bench's slowest step)."""
    every = rogan_gladen(q, judged, _rates(strata))
    if not moved.any():
        return every
    recent = after_a_shift(
        rogan_gladen(q[moved], judged, _rates(_rows(later, moved))),
        replace(every, ci=tuple(b[moved] for b in every.ci)),
    )

    def merged(all_runs, moved_runs):
        out = np.array(all_runs, dtype=float, copy=True)
        out[moved] = moved_runs
        return out

    return replace(
        every,
        **{
            f: merged(getattr(every, f), getattr(recent, f))
            for f in ("mean", "label_variance", "fixed_variance", "youden")
        },
        ci=tuple(merged(a, b) for a, b in zip(every.ci, recent.ci)),
    )


def _rows(strata: Strata, rows: np.ndarray) -> Strata:
    """The strata of some runs (the verdict column, shared by every run, stays whole)."""
    return Strata(
        *(
            getattr(strata, f)[rows] if getattr(strata, f).ndim > 1 else getattr(strata, f)
            for f in ("yes", "labelled", "share", "verdict", "run_labels")
        )
    )


def tally(out: dict) -> dict[str, dict[str, float]]:
    truth, rows = out["truth"], {}
    reference = out["labels-only"][1] - out["labels-only"][0]
    for name in ESTIMATORS:
        low, high = (np.clip(np.asarray(b, dtype=float), 0, 1) for b in out[name])
        given = out["given"] if name == "corrected" else np.ones(len(truth), dtype=bool)
        covered = (low <= truth) & (truth <= high)
        rows[name] = {
            "given": int(given.sum()),
            "covered": int((covered & given).sum()),
            "half_width": float(((high - low) / 2)[given].mean()) if given.any() else float("nan"),
            "not_wider": int(((high - low) <= reference + 1e-9)[given].sum()),
        }
    return rows


def labels_needed_check(
    rng,
    *,
    reps: int,
    origin: str,
    mean: float = 0.5,
    judged: int = 500,
    pilot: int = 30,
    half_width: float = 0.05,
) -> dict:
    """The count labels_for_half_width names after a pilot of `pilot` labels (median over runs),
    against the count that gives ±half_width on average in simulation (bisection over counts, `reps`
    runs each)."""
    cell = Cell(
        "check",
        origin,
        pilot,
        mean,
        (SENS, SPEC),
        (mean,) * EARLIER_RUNS,
        ((SENS, SPEC),) * EARLIER_RUNS,
    )
    model = simulate(cell, reps=reps, rng=rng, judged=judged)["model"]
    named = [
        labels_for_half_width(half_width, _row(model, i), pilot)
        for i in range(reps)
        if np.isfinite(np.asarray(model.label_variance)[i])
    ]
    named = int(np.median([n if n is not None else np.inf for n in named]))

    def mean_half(labels: int) -> float:
        c = cell._replace(labels=int(labels))
        out = simulate(c, reps=reps, rng=rng, judged=judged)
        low, high = (np.clip(b, 0, 1) for b in out["corrected"])
        return float(((high - low) / 2)[out["given"]].mean())

    low, high = 2, 20 * named
    while high - low > max(2, low // 100):
        middle = (low + high) // 2
        low, high = (middle, high) if mean_half(middle) > half_width else (low, middle)
    return {"origin": origin, "named": named, "simulated": high, "half_at_named": mean_half(named)}


def _row(model, i: int):
    def pick(v):
        return np.asarray(v)[i] if np.ndim(v) else v

    return replace(
        model, label_variance=pick(model.label_variance), fixed_variance=pick(model.fixed_variance)
    )


def run_judge_shift_bench(*, reps: int = 1000, seed: int = 29, judged: int = JUDGED) -> dict:
    rng = np.random.default_rng(seed)
    sections = {}
    for title, cells in (("grid", grid()), ("shifts", shifts())):
        rows = []
        for cell in cells:
            started = time.perf_counter()
            result = tally(simulate(cell, reps=reps, rng=rng, judged=judged))
            rows.append(
                {"cell": cell, "estimators": result, "seconds": time.perf_counter() - started}
            )
        sections[title] = rows
    checks = [labels_needed_check(rng, reps=reps, origin=origin) for origin in ORIGINS]
    return {
        "reps": reps,
        "seed": seed,
        "judged": judged,
        "sections": sections,
        "labels_needed": checks,
    }


def _coverage(covered: int, given: int) -> str:
    if not given:
        return "—"
    low, high = proportion_ci(covered, given)
    share = covered / given
    return f"{share:.1%} ±{max(high - share, share - low) * 100:.1f}"


def format_judge_shift_bench(result: dict) -> str:
    reps = result["reps"]
    console = Console(file=io.StringIO(), width=120)
    titles = {
        "grid": f"Judge sens = spec = {SENS}: N = {result['judged']} judged a run, {reps} runs a cell",
        "shifts": f"Quality or judge moves, 150 labels of {EARLIER_RUNS} earlier runs at 0.7, {reps} runs a row",
    }
    for section, rows in result["sections"].items():
        table = Table(title=titles[section])
        for column in (
            "labels",
            "cell",
            "judge-only",
            "labels-only",
            "corrected",
            "given",
            "≤ labels-only",
        ):
            table.add_column(column, justify="left" if column in ("labels", "cell") else "right")
        for row in rows:
            cell, est = row["cell"], row["estimators"]
            corrected = est["corrected"]
            table.add_row(
                f"{cell.labels}, {cell.origin}",
                cell.name,
                *(
                    f"{_coverage(est[name]['covered'], est[name]['given'])}, ±{est[name]['half_width']:.3f}"
                    for name in ESTIMATORS
                ),
                f"{corrected['given'] / reps:.1%}",
                f"{corrected['not_wider'] / max(corrected['given'], 1):.1%}",
            )
        console.print(table)
    for check in result["labels_needed"]:
        console.print(
            f"labels for ±0.05 at p 0.5, N 500, {check['origin']}: named {check['named']} (median after 30 labels; "
            f"±{check['half_at_named']:.3f} on average with them), simulated {check['simulated']} "
            f"({check['named'] / check['simulated'] - 1:+.0%})"
        )
    console.print(
        "Coverage: the share of runs given an interval whose 95 % interval holds the run's true mean (±: the wider "
        "side of its 95 % Jeffreys interval), then the mean half-width. Corrected on earlier days: from the later "
        "labelled runs when their error rates differ from the earlier ones' (χ², p < 0.05), the interval stretched "
        "to hold every run's; withheld when the judge is not shown better than a coin or the rates cannot be "
        "compared. "
        "Labels-only on earlier days describes the labelled runs, not this one."
    )
    return console.file.getvalue()

"""The regression gate's error rates, simulated with the gate itself: false alarms, power, interval
coverage.

An eval of n golden items is simulated for the nine gated metrics, twice: a baseline run and a
candidate run of either the same system (false alarms) or a regressed one (power). Each pair goes
through `stats.regression_gate` as `eval offline` sends it, as `Score`-like rows.

The simulated system, per item (a latent difficulty z ~ N(0, 1) shared by the metrics of an item,
each metric loading 0.6 on it, so hard items are hard for every metric):

| metric | true score of an item | what changes between two runs of the same system |
|---|---|---|
| recall@5 | the gold chunk's rank ≤ 5 (rank distribution below, P = 0.78) | 5 % of items: the rank is drawn again (a reshuffled index) |
| mrr | 1 / rank of the gold chunk; P(rank = 1…10) = .45 .15 .08 .06 .04 .03 .03 .02 .02 .02, not retrieved .10 (mean 0.59) | as recall@5 (the same rank model, drawn separately) |
| faithfulness | 1.0 for 60 % of the answers, else Beta(4, 2) (mean 0.87) | a perfect answer loses one of its 2–6 claims with p 0.08; others + N(0, 0.08), clipped |
| answer_relevancy | Beta(9, 2) (mean 0.82) | + N(0, 0.04), clipped; 2 % of replies judged noncommittal (0) |
| context_precision_ranked | average precision of 5 chunks, chunk j relevant with p .8 .5 .35 .25 .2 | each relevance verdict flips with p 0.05 |
| context_recall | k / m reference claims attributed, m = 1–4, each with p 0.8 | each attribution verdict flips with p 0.05 |
| answer_correctness | correct with p 0.75 (0/1) | the verdict flips with p 0.05 |
| tool_selection_accuracy | the expected tool with p 0.90 (0/1) | flips with p 0.02 |
| tool_call_accuracy | tool and arguments right with p 0.80 (0/1) | flips with p 0.03 |

Failures: the target fails an item (every metric of it `failed`) with p 0.02 per run, and the judge
fails a judged metric (faithfulness, answer relevancy, both context metrics, answer correctness)
with p 0.02 per item and run, independently. Every item carries every metric (in a golden set only
the tool items carry the tool metrics: their n is the number of tool items).

Regressions, each of one metric, sized on the metric's mean as the gate sees it (the observed
scores): *local*, a share of the items drops a lot (a 0/1 score to 0; a gold chunk no longer
retrieved; an answer's faithfulness or relevancy to a quarter; every chunk judged irrelevant, no
claim attributed); *shift*, every item drops a little (a judge score by δ; a gold chunk slips one
rank; each relevant chunk or attributed claim is lost with a small probability). On 0/1 scores a
shift is a local drop, so those metrics have one row. The share, δ or probability is found by
bisection on 200,000 simulated items so that the expected drop is exactly 5 or 10 points. Three more
candidates: the same system under a flaky judge (10 % of judged scores failed in each run: the
failure-rise checks of the earlier gate, one uncorrected test per metric, raised false alarms
there), the target's failure rate rising from 2 % to 10 %, and a 10-point local faithfulness drop in
which half of the dropped answers fail to be judged instead of scoring low (the drop the gate used
to lose behind failures).

`run_target_bench` (`ragwatch bench gate --targets`) measures the asked power target (≥ 90 % for a
10-point drop at n = 100) per metric: a 10-point drop at n = 100, 150, 200, 300 and 400, a 15-point
drop at n = 100, and the n at which the 10-point drop is caught 90 % of the time, with the false
alarms at every n beside them.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from scipy import special
from scipy import stats as sps

from pipelines.evaluation.statistics.gate.rule import GateResult, regression_gate

LOADING = 0.6
"""How much of an item's score comes from its latent difficulty (the rest is the metric's own)."""
TARGET_FAILURE = 0.02
JUDGE_FAILURE = 0.02
RANK_P = np.array([0.45, 0.15, 0.08, 0.06, 0.04, 0.03, 0.03, 0.02, 0.02, 0.02, 0.10])
"""P(gold chunk at rank 1…10), then P(not retrieved)."""
_RECIPROCAL = np.append(1.0 / np.arange(1, 11), 0.0)
_NOT_RETRIEVED = 10
CHUNK_RELEVANT = np.array([0.8, 0.5, 0.35, 0.25, 0.2])
CALIBRATION_ITEMS = 200_000


def _latent(rng: np.random.Generator, z: np.ndarray, *extra: int) -> np.ndarray:
    """U(0, 1) per item (and per extra axis) that grows with the item's ease z: Φ(0.6 z + 0.8 e)."""
    e = rng.standard_normal(z.shape + tuple(extra))
    zz = z.reshape(z.shape + (1,) * len(extra))
    return special.ndtr(LOADING * zz + math.sqrt(1 - LOADING**2) * e)


@dataclass(frozen=True)
class SimMetric:
    """One gated metric: the item's true state, a regression of it, and one run's observed score."""

    name: str
    judged: bool
    binary: bool
    true_state: Callable
    regress: Callable
    observe: Callable
    kinds: tuple[str, ...] = ("local", "shift")


# --- Rank metrics: recall@5 and mrr ---------------------------------------------------------------


def _rank_state(rng, z):
    return np.searchsorted(np.cumsum(RANK_P), 1.0 - _latent(rng, z), side="right").clip(
        0, _NOT_RETRIEVED
    )


def _rank_regress(state, kind, amount, u):
    if kind == "local":  # the gold chunk is no longer retrieved
        return np.where(u[..., 0] < amount, _NOT_RETRIEVED, state)
    return np.where(
        u[..., 0] < amount, np.minimum(state + 1, _NOT_RETRIEVED), state
    )  # slips one rank


def _rank_observe(rng, state):
    redraw = rng.random(state.shape) < 0.05
    fresh = np.searchsorted(np.cumsum(RANK_P), rng.random(state.shape), side="right").clip(
        0, _NOT_RETRIEVED
    )
    return np.where(redraw, fresh, state)


# --- Judge scores on [0, 1] -----------------------------------------------------------------------


def _faithfulness_state(rng, z):
    u = _latent(rng, z)
    return np.where(u >= 0.4, 1.0, sps.beta.ppf(np.minimum(u / 0.4, 1.0), 4, 2))


def _faithfulness_observe(rng, t):
    lost_claim = 1.0 - 1.0 / rng.integers(2, 7, t.shape)
    perfect = np.where(rng.random(t.shape) < 0.08, lost_claim, 1.0)
    return np.where(t >= 1.0, perfect, np.clip(t + rng.normal(0.0, 0.08, t.shape), 0.0, 1.0))


def _relevancy_state(rng, z):
    return sps.beta.ppf(_latent(rng, z), 9, 2)


def _relevancy_observe(rng, t):
    noisy = np.clip(t + rng.normal(0.0, 0.04, t.shape), 0.0, 1.0)
    return np.where(rng.random(t.shape) < 0.02, 0.0, noisy)


def _score_regress(state, kind, amount, u):
    if kind == "local":  # made-up or off-question: a quarter of the score left
        return np.where(u[..., 0] < amount, state / 4.0, state)
    return np.maximum(state - amount, 0.0)


def _precision_state(rng, z):
    return _latent(rng, z, CHUNK_RELEVANT.size) > 1.0 - CHUNK_RELEVANT


def _precision_observe(rng, relevant):
    seen = relevant ^ (rng.random(relevant.shape) < 0.05)
    hits = np.cumsum(seen, axis=-1)
    precision_at = hits / np.arange(1, CHUNK_RELEVANT.size + 1)
    total = hits[..., -1]
    return np.where(total > 0, (precision_at * seen).sum(axis=-1) / np.maximum(total, 1), 0.0)


def _verdicts_regress(state, kind, amount, u):
    if kind == "local":  # nothing relevant or attributed any more
        return state & ~(u[..., :1] < amount)
    return state & ~(u[..., : state.shape[-1]] < amount)


def _recall_state(rng, z):
    claims = rng.choice(np.arange(1, 5), p=[0.3, 0.3, 0.2, 0.2], size=z.shape)
    attributed = _latent(rng, z, 4) > 0.2
    present = np.arange(4) < claims[..., None]
    return np.stack([attributed, present], axis=-1)  # (..., 4, 2)


def _recall_regress(state, kind, amount, u):
    attributed, present = state[..., 0], state[..., 1]
    lost = (u[..., :1] < amount) if kind == "local" else (u[..., :4] < amount)
    return np.stack([attributed & ~lost, present], axis=-1)


def _recall_observe(rng, state):
    attributed, present = state[..., 0], state[..., 1]
    seen = (attributed ^ (rng.random(attributed.shape) < 0.05)) & present
    return seen.sum(axis=-1) / present.sum(axis=-1)


# --- 0/1 scores -----------------------------------------------------------------------------------


def _binary(p: float, flip: float) -> tuple[Callable, Callable, Callable]:
    def state(rng, z):
        return _latent(rng, z) > 1.0 - p

    def regress(s, kind, amount, u):
        return s & ~(u[..., 0] < amount)

    def observe(rng, s):
        return (s ^ (rng.random(s.shape) < flip)).astype(float)

    return state, regress, observe


METRICS: dict[str, SimMetric] = {
    m.name: m
    for m in [
        SimMetric(
            "recall@5",
            False,
            True,
            _rank_state,
            _rank_regress,
            lambda rng, s: (_rank_observe(rng, s) < 5).astype(float),
            ("local",),
        ),
        SimMetric(
            "mrr",
            False,
            False,
            _rank_state,
            _rank_regress,
            lambda rng, s: _RECIPROCAL[_rank_observe(rng, s)],
        ),
        SimMetric(
            "faithfulness", True, False, _faithfulness_state, _score_regress, _faithfulness_observe
        ),
        SimMetric(
            "answer_relevancy", True, False, _relevancy_state, _score_regress, _relevancy_observe
        ),
        SimMetric(
            "context_precision_ranked",
            True,
            False,
            _precision_state,
            _verdicts_regress,
            _precision_observe,
        ),
        SimMetric("context_recall", True, False, _recall_state, _recall_regress, _recall_observe),
        SimMetric("answer_correctness", True, True, *_binary(0.75, 0.05), ("local",)),
        SimMetric("tool_selection_accuracy", False, True, *_binary(0.90, 0.02), ("local",)),
        SimMetric("tool_call_accuracy", False, True, *_binary(0.80, 0.03), ("local",)),
    ]
}
"""The nine gated metrics, each with its own model (see the module docstring)."""


# --- Scenarios ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    """A candidate against the baseline: the same system, or one regressed in one way."""

    name: str
    metric: str | None = None
    kind: str | None = None
    drop: float = 0.0
    """Expected drop of `metric`'s mean (observed scores), in score units."""
    target_failure: float = TARGET_FAILURE
    """The candidate's target failure rate (the baseline's is TARGET_FAILURE)."""
    judge_failure: float = JUDGE_FAILURE
    """The judge's failure rate per judged score, in both runs."""
    hidden: bool = False
    """Half of the dropped items fail to be judged instead of being scored."""


NO_CHANGE = Scenario("no change (false alarms)")
FLAKY_JUDGE = Scenario("no change, the judge failing 10 % of its scores", judge_failure=0.10)
FAILURE_RISE = Scenario("target failures 2 % → 10 %", target_failure=0.10)
HIDDEN_DROP = Scenario(
    "faithfulness −10 local, half of the dropped answers failed instead",
    "faithfulness",
    "local",
    0.10,
    hidden=True,
)


def drop_scenarios(drops: Sequence[float] = (0.05, 0.10)) -> list[Scenario]:
    return [
        Scenario(f"{m.name} −{round(100 * d)} {kind}", m.name, kind, d)
        for m in METRICS.values()
        for kind in m.kinds
        for d in drops
    ]


_CALIBRATED: dict[tuple[str, str, float], float] = {}


def calibrated_amount(metric: str, kind: str, drop: float) -> float:
    """The share (local), probability or δ (shift) that lowers `metric`'s expected observed mean by
    `drop`, by bisection on CALIBRATION_ITEMS items with common random numbers (the mean is monotone
    in it)."""
    key = (metric, kind, drop)
    if key not in _CALIBRATED:
        model = METRICS[metric]
        z = np.random.default_rng(101).standard_normal(CALIBRATION_ITEMS)
        state = model.true_state(np.random.default_rng(102), z)
        u = np.random.default_rng(103).random((CALIBRATION_ITEMS, 5))
        base = model.observe(np.random.default_rng(104), state).mean()

        def shortfall(amount: float) -> float:
            regressed = model.regress(state, kind, amount, u)
            return base - model.observe(np.random.default_rng(104), regressed).mean() - drop

        low, high = 0.0, 1.0
        if shortfall(high) < 0:
            raise ValueError(f"{metric} cannot drop by {drop} with a {kind} regression")
        for _ in range(30):  # 2⁻³⁰ of the unit interval
            middle = (low + high) / 2
            low, high = (middle, high) if shortfall(middle) < 0 else (low, middle)
        _CALIBRATED[key] = (low + high) / 2
    return _CALIBRATED[key]


@dataclass
class SimRuns:
    """reps × n observed scores of every metric in both runs, with their ok masks."""

    base: dict[str, np.ndarray] = field(default_factory=dict)
    cand: dict[str, np.ndarray] = field(default_factory=dict)
    base_ok: dict[str, np.ndarray] = field(default_factory=dict)
    cand_ok: dict[str, np.ndarray] = field(default_factory=dict)


def simulate(scenario: Scenario, n: int, reps: int, rng: np.random.Generator) -> SimRuns:
    shape = (reps, n)
    z = rng.standard_normal(shape)
    base_target_ok = rng.random(shape) >= TARGET_FAILURE
    cand_target_ok = rng.random(shape) >= scenario.target_failure
    runs = SimRuns()
    for model in METRICS.values():
        state = model.true_state(rng, z)
        cand_state, hidden = state, np.zeros(shape, dtype=bool)
        if model.name == scenario.metric:
            u = rng.random(shape + (5,))
            amount = calibrated_amount(model.name, scenario.kind, scenario.drop)
            cand_state = model.regress(state, scenario.kind, amount, u)
            if scenario.hidden:
                hidden = u[..., 0] < amount / 2
        runs.base[model.name] = model.observe(rng, state)
        runs.cand[model.name] = model.observe(rng, cand_state)
        base_ok, cand_ok = base_target_ok.copy(), cand_target_ok & ~hidden
        if model.judged:
            base_ok &= rng.random(shape) >= scenario.judge_failure
            cand_ok &= rng.random(shape) >= scenario.judge_failure
        runs.base_ok[model.name], runs.cand_ok[model.name] = base_ok, cand_ok
    return runs


# --- Running the gate on simulated runs -----------------------------------------------------------


class SimScore(NamedTuple):
    """A score row as `regression_gate` reads it (`stats.ScoreLike`); a tuple: a bench builds
    millions."""

    item_id: str
    stratum: str
    metric: str
    value: float | None
    status: str


def score_rows(runs: SimRuns, rep: int, side: str) -> list[SimScore]:
    """One simulated run's rows: `side` is "base" or "cand"."""
    values, ok = (runs.base, runs.base_ok) if side == "base" else (runs.cand, runs.cand_ok)
    rows = []
    for metric, matrix in values.items():
        for item, value, good in zip(
            _item_ids(matrix.shape[1]), matrix[rep].tolist(), ok[metric][rep].tolist()
        ):
            rows.append(
                SimScore(item, "sim", metric, value if good else None, "ok" if good else "failed")
            )
    return rows


@functools.lru_cache(maxsize=8)
def _item_ids(n: int) -> tuple[str, ...]:
    return tuple(f"q{i}" for i in range(n))


def gate_run(runs: SimRuns, rep: int, gate: Callable | None = None, **options) -> GateResult:
    """Repetition `rep` of `runs` through `regression_gate` (or `gate`, a function of the same
    signature)."""
    return (gate or regression_gate)(
        score_rows(runs, rep, "cand"), score_rows(runs, rep, "base"), list(METRICS), **options
    )


TARGETS = {"false_alarms": 0.05, "power_10_at_100": 0.90, "coverage": (0.94, 0.97)}
"""The gate's targets: false alarms ≤ 5 % per gate, ≥ 90 % power for a 10-point drop of any gated
metric at n = 100, coverage of the printed 95 % interval within 0.94–0.97 at n ≥ 30."""


def run_gate_bench(
    *,
    sizes: Sequence[int] = (30, 60, 100),
    reps: int = 400,
    drops: Sequence[float] = (0.05, 0.10),
    seed: int = 17,
    draws: int | None = None,
    gate: Callable | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Every scenario at every n, `reps` simulated baseline/candidate pairs each, through the gate.

    Per cell: `gate_failed` (the share of candidates the gate failed: the false-alarm rate when
    nothing changed), `metric_failed` (the share where the regressed metric itself failed: the
    power), and per metric the share of its printed interval covering the true difference (0, or
    minus the drop for the regressed metric; skipped for the hidden drop, whose failed items are not
    missing at random). `gate`: another gate function of the same signature (the one an earlier
    version shipped).
    """
    # The flaky judge came last: each scenario's seed is its place in this list.
    scenarios = [NO_CHANGE, FAILURE_RISE, HIDDEN_DROP, *drop_scenarios(drops), FLAKY_JUDGE]
    options = {} if draws is None else {"draws": draws}
    started, cells = time.perf_counter(), []
    for n in sizes:
        for index, scenario in enumerate(scenarios):
            runs = simulate(scenario, n, reps, np.random.default_rng([seed, n, index]))
            gate_failed = metric_failed = 0
            covered: dict[str, list[int]] = {m: [0, 0] for m in METRICS}
            for rep in range(reps):
                result = gate_run(runs, rep, gate, **options)
                gate_failed += not result.passed
                metric_failed += scenario.metric in result.failed_metrics
                if scenario.hidden:
                    continue
                for m in result.metrics:
                    if m.ci_low is None:
                        continue
                    truth = -scenario.drop if m.metric == scenario.metric else 0.0
                    covered[m.metric][0] += m.ci_low - 1e-12 <= truth <= m.ci_high + 1e-12
                    covered[m.metric][1] += 1
            cells.append(
                {
                    "scenario": scenario.name,
                    "metric": scenario.metric,
                    "kind": scenario.kind,
                    "drop": scenario.drop,
                    "n": n,
                    "reps": reps,
                    "gate_failed": gate_failed / reps,
                    "metric_failed": metric_failed / reps if scenario.metric else None,
                    "coverage": {m: c for m, c in covered.items() if c[1]},
                }
            )
            if progress:
                progress(f"n = {n}: {scenario.name}: gate failed {gate_failed / reps:.3f}")
    return {
        "sizes": list(sizes),
        "reps": reps,
        "draws": draws,
        "seed": seed,
        "cells": cells,
        "seconds": time.perf_counter() - started,
    }


def _rate(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def format_gate_bench(result: dict) -> str:
    """Markdown tables: how often the gate fails per candidate and n, then the printed intervals'
    coverage."""
    sizes = result["sizes"]
    head = "| candidate | " + " | ".join(f"n = {n}" for n in sizes) + " |"
    rule = "|---" * (len(sizes) + 1) + "|"
    rates: dict[str, dict[int, list[float]]] = {}
    for cell in result["cells"]:
        if cell["metric"] is None or cell["scenario"] == HIDDEN_DROP.name:
            label = cell["scenario"]
        else:  # the drops of one metric and kind share a row: "0.36 / 0.89" for 5 / 10 points
            kind = (
                f"{cell['kind']} " if len(METRICS[cell["metric"]].kinds) > 1 else ""
            )  # 0/1: one kind of drop
            label = f"{cell['metric']} {kind}drop of {' / '.join(f'{round(100 * d)}' for d in _drops(result, cell))} points"
        rate = cell["gate_failed"] if cell["metric"] is None else cell["metric_failed"]
        rates.setdefault(label, {}).setdefault(cell["n"], []).append(rate)
    order = [NO_CHANGE.name, FLAKY_JUDGE.name, FAILURE_RISE.name, HIDDEN_DROP.name]
    labels = sorted(rates, key=lambda label: order.index(label) if label in order else len(order))
    lines = [
        f"How often the gate fails ({result['reps']} simulated pairs of runs per cell): for an unchanged system, "
        f"any metric failing (a false alarm); for a regression, the regressed metric failing (the power).",
        "",
        head,
        rule,
    ]
    for label in labels:
        lines.append(
            f"| {label} | "
            + " | ".join(" / ".join(_rate(r) for r in rates[label].get(n, [])) for n in sizes)
            + " |"
        )
    lines += [
        "",
        "Coverage of the printed 95 % interval of each metric's paired difference (nothing changed / the "
        "metric's own drops):",
        "",
        head.replace("candidate", "metric", 1),
        rule,
    ]
    for metric in METRICS:
        parts = []
        for n in sizes:
            still, moved = [0, 0], [0, 0]
            for cell in result["cells"]:
                if cell["n"] != n:
                    continue
                target = (
                    still
                    if cell["scenario"] == NO_CHANGE.name
                    else moved
                    if cell["metric"] == metric
                    else None
                )
                if target is not None:
                    hit, total = cell["coverage"].get(metric, (0, 0))
                    target[0] += hit
                    target[1] += total
            parts.append(
                " / ".join(_rate(hit / total if total else None) for hit, total in (still, moved))
            )
        lines.append(f"| {metric} | " + " | ".join(parts) + " |")
    draws = result["draws"] or "the gate's own"
    lines += [
        "",
        f"{result['seconds']:.0f} s; null draws per family test: {draws}; seed {result['seed']}.",
    ]
    return "\n".join(lines)


def _drops(result: dict, cell: dict) -> list[float]:
    return sorted(
        {
            c["drop"]
            for c in result["cells"]
            if c["metric"] == cell["metric"]
            and c["kind"] == cell["kind"]
            and c["scenario"] != HIDDEN_DROP.name
        }
    )


# --- The nearest honest target: power per metric at n = 100 and beyond ----------------------------

TARGET_SIZES = (100, 150, 200, 300, 400)
"""Eval sizes at which `run_target_bench` measures each metric's 10-point drop; the n reaching 90 %
is interpolated between them."""
TARGET_POWER = 0.90


def run_target_bench(
    *,
    reps: int = 300,
    sizes: Sequence[int] = TARGET_SIZES,
    seed: int = 17,
    draws: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Per metric and kind of drop: the power for a 10-point drop at every n of `sizes`, for a
    15-point drop at n = 100, and the false alarms (unchanged system, flaky judge) at every n: the
    asked ≥ 90 % at n = 100 next to what the gate reaches and the n it needs."""
    started, cells = time.perf_counter(), []
    options = {} if draws is None else {"draws": draws}
    plan = [(s, n) for n in sizes for s in (NO_CHANGE, FLAKY_JUDGE, *drop_scenarios((0.10,)))]
    plan += [(s, 100) for s in drop_scenarios((0.15,))]
    for index, (scenario, n) in enumerate(plan):
        runs = simulate(scenario, n, reps, np.random.default_rng([seed, n, index]))
        results = [gate_run(runs, rep, **options) for rep in range(reps)]
        rate = np.mean(
            [
                (scenario.metric in r.failed_metrics) if scenario.metric else not r.passed
                for r in results
            ]
        )
        cells.append(
            {
                "scenario": scenario.name,
                "metric": scenario.metric,
                "kind": scenario.kind,
                "drop": scenario.drop,
                "n": n,
                "rate": float(rate),
            }
        )
        if progress:
            progress(f"n = {n}: {scenario.name}: {rate:.3f}")
    return {
        "reps": reps,
        "sizes": list(sizes),
        "seed": seed,
        "draws": draws,
        "cells": cells,
        "seconds": time.perf_counter() - started,
    }


def n_for_power(points: Sequence[tuple[int, float]], target: float = TARGET_POWER) -> str:
    """The n at which power first reaches `target`, linear between the measured sizes: "≈ 170", "≤
    100", "> 400"."""
    points = sorted(points)
    if points[0][1] >= target:
        return f"≤ {points[0][0]}"
    for (n0, p0), (n1, p1) in zip(points, points[1:]):
        if p1 >= target:
            return f"≈ {round(n0 + (target - p0) / (p1 - p0) * (n1 - n0), -1):.0f}"
    return f"> {points[-1][0]}"


def format_target_bench(result: dict) -> str:
    """Markdown: per metric, power for 10 points at n = 100 and 200, for 15 points at n = 100, the n
    reaching 90 %."""
    cells, reps = result["cells"], result["reps"]
    sizes = result["sizes"]

    def rate(**key) -> float | None:
        return next((c["rate"] for c in cells if all(c[k] == v for k, v in key.items())), None)

    se = 0.5 / math.sqrt(reps)
    lines = [
        f"Power of the gate per metric ({reps} simulated pairs of runs per cell, the regressed metric failing; "
        f"± ≤ {200 * se:.0f} points at 95 %):",
        "",
        "| metric, drop | −10 at n = 100 | −10 at n = 200 | −15 at n = 100 | n for 90 % at −10 |",
        "|---|---|---|---|---|",
    ]
    for scenario in drop_scenarios((0.10,)):
        kind = f" {scenario.kind}" if len(METRICS[scenario.metric].kinds) > 1 else ""
        curve = [(n, rate(scenario=scenario.name, n=n)) for n in sizes]
        fifteen = rate(metric=scenario.metric, kind=scenario.kind, drop=0.15, n=100)
        lines.append(
            f"| {scenario.metric}{kind} | {_rate(rate(scenario=scenario.name, n=100))} | "
            f"{_rate(rate(scenario=scenario.name, n=200))} | {_rate(fifteen)} | {n_for_power(curve)} |"
        )
    alarms = " · ".join(
        f"n = {n}: {_rate(rate(scenario=NO_CHANGE.name, n=n))} ({_rate(rate(scenario=FLAKY_JUDGE.name, n=n))})"
        for n in sizes
    )
    draws = result["draws"] or "the gate's own"
    lines += [
        "",
        f"False alarms (flaky judge): {alarms}.",
        "",
        f"n for 90 %: linear between the sizes measured ({', '.join(map(str, sizes))}). {result['seconds']:.0f} s; "
        f"null draws per family test: {draws}; seed {result['seed']}.",
    ]
    return "\n".join(lines)


# --- What a pass vouches for: the drop the gate says it catches, and how often it does ------------


def run_detectable_bench(
    *,
    sizes: Sequence[int] = (100,),
    reps: int = 200,
    seed: int = 17,
    draws: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Per n and metric: the drop the gate states it catches 90 % of the time
    (`MetricGate.detectable_drop`, its median and range over `reps` unchanged systems), then the
    power measured for a drop of that median size, each kind of drop: the statement holds where the
    power is ≥ 0.90."""
    started, rows = time.perf_counter(), []
    options = {} if draws is None else {"draws": draws}
    for n in sizes:
        runs = simulate(NO_CHANGE, n, reps, np.random.default_rng([seed, n]))
        stated: dict[str, list[float]] = {m: [] for m in METRICS}
        for rep in range(reps):
            for m in gate_run(runs, rep, **options).metrics:
                if m.detectable_drop is not None:
                    stated[m.metric].append(m.detectable_drop)
        for index, (name, model) in enumerate(METRICS.items()):
            values = np.array(stated[name])
            if not values.size:
                continue
            drop = round(float(np.median(values)), 3)
            low, high = (float(q) for q in np.quantile(values, (0.1, 0.9)))
            for kind in model.kinds:
                scenario = Scenario(f"{name} −{drop:.3f} {kind}", name, kind, drop)
                try:
                    regressed = simulate(
                        scenario, n, reps, np.random.default_rng([seed, n, index, len(kind)])
                    )
                except ValueError:  # e.g. every rank slipping by one cannot lower MRR by 0.38
                    power = None
                else:
                    power = float(
                        np.mean(
                            [
                                name in gate_run(regressed, rep, **options).failed_metrics
                                for rep in range(reps)
                            ]
                        )
                    )
                rows.append(
                    {
                        "n": n,
                        "metric": name,
                        "kind": kind,
                        "stated": drop,
                        "low": low,
                        "high": high,
                        "power": power,
                    }
                )
                if progress:
                    progress(f"n = {n}: {name} {kind}: states {drop:.3f}, caught {_rate(power)}")
    return {
        "reps": reps,
        "sizes": list(sizes),
        "seed": seed,
        "rows": rows,
        "seconds": time.perf_counter() - started,
    }


def format_detectable_bench(result: dict) -> str:
    """Markdown: per n and metric, the drop a pass states it would have caught, and the power
    measured there."""
    lines = [
        f"What a pass vouches for ({result['reps']} unchanged systems per n give the stated drop, median "
        f"[10th–90th percentile]; {result['reps']} regressed ones the power at the median):",
        "",
        "| n | metric, drop | catches (90 %), as stated | power measured there |",
        "|---|---|---|---|",
    ]
    for row in result["rows"]:
        kind = f" {row['kind']}" if len(METRICS[row["metric"]].kinds) > 1 else ""
        power = (
            _rate(row["power"])
            if row["power"] is not None
            else f"– (no {row['kind']} drop is this large)"
        )
        lines.append(
            f"| {row['n']} | {row['metric']}{kind} | {row['stated']:.3f} [{row['low']:.3f}–{row['high']:.3f}] "
            f"| {power} |"
        )
    lines += ["", f"{result['seconds']:.0f} s; seed {result['seed']}."]
    return "\n".join(lines)

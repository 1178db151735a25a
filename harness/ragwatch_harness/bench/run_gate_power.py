"""The whole gate of a run simulated through the results store: `RunGate` (baseline and reference),
not one comparison.

`gate_power.py` measures one comparison (`regression_gate`). A run's gate (`gate_against_baseline`)
makes two, the baseline and the reference, and fails when either fails; what a user sees is that
verdict, week after week. This bench saves simulated runs (the same nine-metric item model as
`gate_power.py`) in a real `ResultsStore` (SQLite) and lets the gate choose its baseline and
reference as it does in production.

Two benches:

- `run_whole_gate_bench`: per n, three runs per simulated target, the reference (week 1), the
  baseline (week 2, accepted) and the candidate (week 3), of the same system (false alarms of the
  whole gate) or with the candidate regressed (a sudden drop: power of the whole gate) or drifting
  (week 2 lower than week 1 by a step, the candidate by two).
- `run_chain_bench`: chains of weekly runs of one target, each gated as `eval offline` gates it and
  saved with its verdict (a run whose gate failed is the next run's baseline, never a reference
  unless pinned), optionally pinning every release
  (every run that passed). Per week, how often an unchanged system fails its gate, and how often any
  week of the chain fails; for a system drifting a little every week, the week its drift is caught.
"""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

import numpy as np

from pipelines.core.records import Score
from pipelines.evaluation.statistics.gate.run_gate import gate_against_baseline
from pipelines.stores.results import EvalRun, ResultsStore, run_id
from ragwatch_harness.bench.gate_power import (
    JUDGE_FAILURE,
    METRICS,
    TARGET_FAILURE,
    calibrated_amount,
)

GOLDEN = "sim@v1"
START = date(2026, 1, 5)  # a Monday: the weekly runs' first logical date


@dataclass(frozen=True)
class Change:
    """How one run's system differs from week 1's: a drop of one metric's observed mean (0:
    unchanged)."""

    metric: str | None = None
    kind: str = "local"
    drop: float = 0.0


@dataclass(frozen=True)
class WholeScenario:
    name: str
    baseline: Change = Change()
    candidate: Change = Change()
    """The reference is always week 1's system, unchanged."""


def whole_scenarios() -> list[WholeScenario]:
    sudden = [
        WholeScenario(f"{m} −10 {kind}, sudden", candidate=Change(m, kind, 0.10))
        for m, kind in (
            ("faithfulness", "local"),
            ("recall@5", "local"),
            ("answer_correctness", "local"),
            ("context_recall", "shift"),
        )
    ]
    drift = WholeScenario(
        "faithfulness drifting −0.03 a week (baseline −0.03, candidate −0.06)",
        baseline=Change("faithfulness", "shift", 0.03),
        candidate=Change("faithfulness", "shift", 0.06),
    )
    return [WholeScenario("no change (false alarms)"), *sudden, drift]


class SystemModel:
    """One simulated golden set of n items: each item's true state per metric, drawn once; runs
    observe it."""

    def __init__(self, n: int, rng: np.random.Generator):
        self.n, self.rng, self.version = n, rng, GOLDEN
        z = rng.standard_normal(n)
        self.state = {name: model.true_state(rng, z) for name, model in METRICS.items()}
        # One uniform draw per item and metric, shared by every regression: a larger drop contains a
        # smaller one.
        self.u = {name: rng.random((n, 5)) for name in METRICS}
        self.item_ids = [f"q{i}" for i in range(n)]
        self._next_id = n

    def refresh(self, share: float, version: str) -> None:
        """A golden refresh to `version`: `share` of the items retired at random, as many new ones
        drawn in their place (new ids, new true states)."""
        retired = self.rng.choice(self.n, round(share * self.n), replace=False)
        z = self.rng.standard_normal(retired.size)
        for name, model in METRICS.items():
            self.state[name][retired] = model.true_state(self.rng, z)
            self.u[name][retired] = self.rng.random((retired.size, 5))
        for index in retired.tolist():
            self.item_ids[index], self._next_id = f"q{self._next_id}", self._next_id + 1
        self.version = version

    def run_scores(self, run: EvalRun, change: Change, *, judged: bool = True) -> list[Score]:
        """One run's score rows: every metric observed afresh (judge and retrieval noise), failures
        included; without `judged`, only the metrics no judge scores (a run with the judge off)."""
        rng, rows = self.rng, []
        target_ok = rng.random(self.n) >= TARGET_FAILURE
        for name, model in METRICS.items():
            if model.judged and not judged:
                continue
            state = self.state[name]
            if change.metric == name and change.drop > 0:
                amount = calibrated_amount(name, change.kind, change.drop)
                state = model.regress(state, change.kind, amount, self.u[name])
            values = model.observe(rng, state).astype(float)
            ok = target_ok & (rng.random(self.n) >= JUDGE_FAILURE) if model.judged else target_ok
            for item, value, good in zip(self.item_ids, values.tolist(), ok.tolist()):
                rows.append(
                    Score(
                        run_id=run.run_id,
                        suite="offline",
                        item_id=item,
                        stratum="sim",
                        metric=name,
                        value=value if good else None,
                        status="ok" if good else "failed",
                        dataset_version=self.version,
                    )
                )
        return rows


def weekly_run(target: str, week: int, version: str = GOLDEN) -> EvalRun:
    day = START + timedelta(weeks=week)
    return EvalRun(
        run_id=run_id("offline", day, target),
        suite="offline",
        logical_date=day,
        target=target,
        dataset_version=version,
    )


def gate_and_save(store: ResultsStore, run: EvalRun, scores: list[Score]):
    """What `eval offline` does with a finished run: gate it against the store, save it with the
    verdict."""
    gate = gate_against_baseline(store, run, scores)
    run.gate_passed, run.gate = (gate.passed, gate.to_dict()) if gate else (None, None)
    store.save_run(run, scores)
    return gate


def _store(folder: str) -> ResultsStore:
    store = ResultsStore(f"sqlite:///{Path(folder) / 'results.db'}")
    store.create()
    return store


def run_whole_gate_bench(
    *,
    sizes: Sequence[int] = (100,),
    reps: int = 400,
    seed: int = 29,
    scenarios: Sequence[WholeScenario] | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Per n and scenario, `reps` targets of three weekly runs each; how often the candidate's whole
    gate fails, and how often each comparison does. The reference and the baseline are saved as
    accepted (their own gates are not run: this bench measures one decision; `run_chain_bench`
    measures the sequence)."""
    scenarios = list(scenarios or whole_scenarios())
    started, cells = time.perf_counter(), []
    with tempfile.TemporaryDirectory(prefix="ragwatch-gate-bench-") as folder:
        store = _store(folder)
        try:
            for n in sizes:
                for index, scenario in enumerate(scenarios):
                    rng = np.random.default_rng([seed, n, index])
                    failed = {"gate": 0, "baseline": 0, "reference": 0, "both compared": 0}
                    for rep in range(reps):
                        target = f"n{n}-s{index}-r{rep}"
                        system = SystemModel(n, rng)
                        for week, change in ((0, Change()), (1, scenario.baseline)):
                            run = weekly_run(target, week)
                            run.gate_passed = (
                                True  # accepted, whatever its own gate would have said
                            )
                            store.save_run(run, system.run_scores(run, change))
                        candidate = weekly_run(target, 2)
                        gate = gate_against_baseline(
                            store, candidate, system.run_scores(candidate, scenario.candidate)
                        )
                        failed["gate"] += gate.passed is False
                        for role in ("baseline", "reference"):
                            comparison = getattr(gate, role)
                            failed[role] += comparison is not None and comparison.passed is False
                        failed["both compared"] += (
                            gate.reference is not None and gate.baseline is not None
                        )
                    cells.append(
                        {
                            "n": n,
                            "scenario": scenario.name,
                            "reps": reps,
                            **{k: v / reps for k, v in failed.items()},
                        }
                    )
                    if progress:
                        progress(
                            f"n = {n}: {scenario.name}: whole gate failed {failed['gate'] / reps:.3f}"
                        )
        finally:
            store.dispose()
    return {
        "sizes": list(sizes),
        "reps": reps,
        "seed": seed,
        "cells": cells,
        "seconds": time.perf_counter() - started,
    }


def format_whole_gate_bench(result: dict) -> str:
    lines = [
        f"The whole gate of a run (baseline and reference; {result['reps']} simulated targets per cell, three "
        f"weekly runs each, saved in a SQLite results DB): how often it fails, and how often each comparison "
        f"does.",
        "",
        "| n | candidate | whole gate failed | against the baseline | against the reference | both compared |",
        "|---|---|---|---|---|---|",
    ]
    for c in result["cells"]:
        lines.append(
            f"| {c['n']} | {c['scenario']} | {c['gate']:.3f} | {c['baseline']:.3f} | {c['reference']:.3f} "
            f"| {c['both compared']:.2f} |"
        )
    lines += ["", f"{result['seconds']:.0f} s; seed {result['seed']}."]
    return "\n".join(lines)


def run_chain_bench(
    *,
    n: int = 100,
    weeks: int = 10,
    chains: int = 100,
    pin_releases: bool = False,
    drift: float = 0.0,
    drift_metric: str = "faithfulness",
    first_partial: bool = False,
    refresh_every: int = 0,
    turnover: float = 0.2,
    until_caught: bool = False,
    seed: int = 29,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """`chains` targets, each `weeks` weekly runs gated and saved in order; with `pin_releases`,
    every run whose gate passed is pinned as a release (a team shipping every week). `drift`: the
    system loses that much of `drift_metric`'s mean every week (a shift), so week k is k·drift below
    week 0; 0: unchanged. `first_partial`: week 0 runs with the judge off (only the metrics no judge
    scores) and is pinned all the same (`eval pin --partial`). `refresh_every`: every that many
    weeks a golden refresh (`sim@v2`, ...) retires `turnover` of the items and adds as many new
    ones. `until_caught`: a chain stops at its first failed week (the week its drift is caught; the
    later weeks' rates then stand on the chains not caught yet).

    Returns per week the share of chains whose run failed its gate (week 0 has no gate), the share
    of chains with any failed week, per week the share of chains caught by then, and per chain the
    first week whose gate failed."""
    started = time.perf_counter()
    failed_per_week = np.zeros(weeks)
    gated_per_week = np.zeros(weeks)
    first_failed: list[int | None] = []
    variant = [int(first_partial)] if first_partial else []
    variant += [refresh_every, round(turnover * 100)] if refresh_every else []
    with tempfile.TemporaryDirectory(prefix="ragwatch-chain-bench-") as folder:
        store = _store(folder)
        try:
            rng = np.random.default_rng(
                [seed, n, weeks, int(pin_releases), round(drift * 1e4), *variant]
            )
            for chain in range(chains):
                target, system, first = f"chain-{chain}", SystemModel(n, rng), None
                for week in range(weeks):
                    if refresh_every and week and week % refresh_every == 0:
                        system.refresh(turnover, f"sim@v{week // refresh_every + 1}")
                    run = weekly_run(target, week, system.version)
                    change = Change(drift_metric, "shift", drift * week) if drift else Change()
                    judged = not (first_partial and week == 0)
                    gate = gate_and_save(store, run, system.run_scores(run, change, judged=judged))
                    if gate is not None and gate.passed is not None:
                        gated_per_week[week] += 1
                        failed_per_week[week] += not gate.passed
                        if not gate.passed and first is None:
                            first = week
                    if until_caught and first is not None:
                        break
                    if (pin_releases or not judged) and run.gate_passed is not False:
                        store.pin(run.run_id)
                first_failed.append(first)
                if progress and (chain + 1) % max(1, chains // 10) == 0:
                    progress(f"{chain + 1} of {chains} chains")
        finally:
            store.dispose()
    per_week = [float(f / g) if g else None for f, g in zip(failed_per_week, gated_per_week)]
    gated = [r for r in per_week if r is not None]
    return {
        "n": n,
        "weeks": weeks,
        "chains": chains,
        "pin_releases": pin_releases,
        "drift": drift,
        "drift_metric": drift_metric,
        "first_partial": first_partial,
        "refresh_every": refresh_every,
        "turnover": turnover,
        "until_caught": until_caught,
        "seed": seed,
        "per_week": per_week,
        "mean_per_run": float(np.mean(gated)) if gated else None,
        "worst_week": max(gated) if gated else None,
        "any_week": sum(f is not None for f in first_failed) / chains,
        "caught_by": [
            sum(f is not None and f <= w for f in first_failed) / chains for w in range(weeks)
        ],
        "first_failed": first_failed,
        "seconds": time.perf_counter() - started,
    }


def monte_carlo_error(share: float, draws: int) -> float:
    """Half-width of the 95 % normal interval of a simulated share: 1.96 √(p (1 − p) / draws), at
    least that of one draw in `draws` (a share of 0 or 1 is not exact)."""
    p = min(max(share, 1 / draws), 1 - 1 / draws)
    return 1.96 * math.sqrt(p * (1 - p) / draws)


def format_chain_bench(result: dict) -> str:
    pins = (
        "every passing run pinned as a release" if result["pin_releases"] else "no release pinned"
    )
    if result.get("first_partial"):
        pins += "; week 0 with the judge off, pinned as a partial release"
    if result.get("refresh_every"):
        pins += f"; a golden refresh every {result['refresh_every']} weeks retiring {result['turnover']:.0%} of the items"
    if result.get("until_caught"):
        pins += "; each chain stopped at its first failed week"
    system = (
        f"{result['drift_metric']} drifting −{result['drift']:g} a week"
        if result["drift"]
        else "an unchanged system"
    )
    weeks = " · ".join(
        f"w{w}: {'–' if r is None else f'{r:.3f}'}" for w, r in enumerate(result["per_week"])
    )
    chains = result["chains"]
    any_week = result["any_week"]
    lines = [
        f"{chains} chains of {result['weeks']} weekly runs (n = {result['n']}), {system}, {pins}, "
        f"each gated and saved in a SQLite results DB.",
        "",
        f"Runs whose gate failed, per week: {weeks}.",
        f"Per run: mean {result['mean_per_run']:.3f}, worst week {result['worst_week']:.3f}; chains with any "
        f"failed week: {any_week:.3f} ± {monte_carlo_error(any_week, chains):.3f} (95 %, Monte Carlo).",
    ]
    if result["drift"]:
        caught = [w for w in result["first_failed"] if w is not None]
        median = f"week {int(np.median(caught))}" if caught else "never"
        by_week = " · ".join(
            f"w{w}: {share:.2f}" for w, share in enumerate(result["caught_by"]) if w
        )
        lines += [
            (
                f"Drift caught within the chain: {len(caught) / chains:.3f} of chains; median first "
                f"failing week {median} (a total drop of {result['drift']:g} × that week)."
            ),
            f"Caught by week (share of chains, ± ≤ {monte_carlo_error(0.5, chains):.2f}): {by_week}.",
        ]
    lines += ["", f"{result['seconds']:.0f} s; seed {result['seed']}."]
    return "\n".join(lines)

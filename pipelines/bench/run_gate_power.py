"""The whole gate of a run simulated through the results store: `RunGate` (baseline and reference), not one comparison.

`gate_power.py` measures one comparison (`regression_gate`). A run's gate (`gate_against_baseline`) makes two, the
baseline and the reference, and fails when either fails; what a user sees is that verdict, week after week. This
bench saves simulated runs (the same nine-metric item model as `gate_power.py`) in a real `ResultsStore` (SQLite)
and lets the gate choose its baseline and reference as it does in production.

Two benches:

- `run_whole_gate_bench`: per n, three runs per simulated target, the reference (week 1), the baseline (week 2,
  accepted) and the candidate (week 3), of the same system (false alarms of the whole gate) or with the candidate
  regressed (a sudden drop: power of the whole gate) or drifting (week 2 lower than week 1 by a step, the
  candidate by two).
- `run_chain_bench`: chains of weekly runs of one target, each gated as `eval offline` gates it and saved with its
  verdict (a run whose gate failed is not accepted), optionally pinning every release (every run that passed).
  Per week, how often an unchanged system fails its gate, and how often any week of the chain fails; for a system
  drifting a little every week, the week its drift is caught.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

import numpy as np

from pipelines.bench.gate_power import JUDGE_FAILURE, METRICS, TARGET_FAILURE, calibrated_amount
from pipelines.evaluation.statistics.gate.run_gate import gate_against_baseline
from pipelines.records import Score
from pipelines.stores.results import EvalRun, ResultsStore, run_id

GOLDEN = "sim@v1"
START = date(2026, 1, 5)  # a Monday: the weekly runs' first logical date


@dataclass(frozen=True)
class Change:
    """How one run's system differs from week 1's: a drop of one metric's observed mean (0: unchanged)."""

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
    """One simulated golden set of n items: each item's true state per metric, drawn once; runs observe it."""

    def __init__(self, n: int, rng: np.random.Generator):
        self.n, self.rng = n, rng
        z = rng.standard_normal(n)
        self.state = {name: model.true_state(rng, z) for name, model in METRICS.items()}
        # One uniform draw per item and metric, shared by every regression: a larger drop contains a smaller one.
        self.u = {name: rng.random((n, 5)) for name in METRICS}
        self.item_ids = [f"q{i}" for i in range(n)]

    def run_scores(self, run: EvalRun, change: Change) -> list[Score]:
        """One run's score rows: every metric observed afresh (judge and retrieval noise), failures included."""
        rng, rows = self.rng, []
        target_ok = rng.random(self.n) >= TARGET_FAILURE
        for name, model in METRICS.items():
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
                        dataset_version=GOLDEN,
                    )
                )
        return rows


def weekly_run(target: str, week: int) -> EvalRun:
    day = START + timedelta(weeks=week)
    return EvalRun(
        run_id=run_id("offline", day, target), suite="offline", logical_date=day, target=target, dataset_version=GOLDEN
    )


def gate_and_save(store: ResultsStore, run: EvalRun, scores: list[Score]):
    """What `eval offline` does with a finished run: gate it against the store, save it with the verdict."""
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
    """Per n and scenario, `reps` targets of three weekly runs each; how often the candidate's whole gate fails,
    and how often each comparison does. The reference and the baseline are saved as accepted (their own gates
    are not run: this bench measures one decision; `run_chain_bench` measures the sequence)."""
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
                            run.gate_passed = True  # accepted, whatever its own gate would have said
                            store.save_run(run, system.run_scores(run, change))
                        candidate = weekly_run(target, 2)
                        gate = gate_against_baseline(store, candidate, system.run_scores(candidate, scenario.candidate))
                        failed["gate"] += gate.passed is False
                        for role in ("baseline", "reference"):
                            comparison = getattr(gate, role)
                            failed[role] += comparison is not None and comparison.passed is False
                        failed["both compared"] += gate.reference is not None and gate.baseline is not None
                    cells.append(
                        {"n": n, "scenario": scenario.name, "reps": reps, **{k: v / reps for k, v in failed.items()}}
                    )
                    if progress:
                        progress(f"n = {n}: {scenario.name}: whole gate failed {failed['gate'] / reps:.3f}")
        finally:
            store.dispose()
    return {"sizes": list(sizes), "reps": reps, "seed": seed, "cells": cells, "seconds": time.perf_counter() - started}


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
    seed: int = 29,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """`chains` targets, each `weeks` weekly runs gated and saved in order; with `pin_releases`, every run whose
    gate passed is pinned as a release (a team shipping every week). `drift`: the system loses that much of
    `drift_metric`'s mean every week (a shift), so week k is k·drift below week 0; 0: unchanged.

    Returns per week the share of chains whose run failed its gate (week 0 has no gate), the share of chains
    with any failed week, and with a drift, per chain the first week whose gate failed."""
    started = time.perf_counter()
    failed_per_week = np.zeros(weeks)
    gated_per_week = np.zeros(weeks)
    first_failed: list[int | None] = []
    with tempfile.TemporaryDirectory(prefix="ragwatch-chain-bench-") as folder:
        store = _store(folder)
        try:
            rng = np.random.default_rng([seed, n, weeks, int(pin_releases), round(drift * 1e4)])
            for chain in range(chains):
                target, system, first = f"chain-{chain}", SystemModel(n, rng), None
                for week in range(weeks):
                    run = weekly_run(target, week)
                    change = Change(drift_metric, "shift", drift * week) if drift else Change()
                    gate = gate_and_save(store, run, system.run_scores(run, change))
                    if gate is not None and gate.passed is not None:
                        gated_per_week[week] += 1
                        failed_per_week[week] += not gate.passed
                        if not gate.passed and first is None:
                            first = week
                    if pin_releases and run.gate_passed is not False:
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
        "seed": seed,
        "per_week": per_week,
        "mean_per_run": float(np.mean(gated)) if gated else None,
        "worst_week": max(gated) if gated else None,
        "any_week": sum(f is not None for f in first_failed) / chains,
        "first_failed": first_failed,
        "seconds": time.perf_counter() - started,
    }


def format_chain_bench(result: dict) -> str:
    pins = "every passing run pinned as a release" if result["pin_releases"] else "no release pinned"
    system = (
        f"{result['drift_metric']} drifting −{result['drift']:g} a week" if result["drift"] else "an unchanged system"
    )
    weeks = " · ".join(f"w{w}: {'–' if r is None else f'{r:.3f}'}" for w, r in enumerate(result["per_week"]))
    lines = [
        f"{result['chains']} chains of {result['weeks']} weekly runs (n = {result['n']}), {system}, {pins}, "
        f"each gated and saved in a SQLite results DB.",
        "",
        f"Runs whose gate failed, per week: {weeks}.",
        f"Per run: mean {result['mean_per_run']:.3f}, worst week {result['worst_week']:.3f}; chains with any "
        f"failed week: {result['any_week']:.3f}.",
    ]
    if result["drift"]:
        caught = [w for w in result["first_failed"] if w is not None]
        median = f"week {int(np.median(caught))}" if caught else "never"
        lines.append(
            f"Drift caught within the chain: {len(caught) / result['chains']:.3f} of chains; median first "
            f"failing week {median} (a total drop of {result['drift']:g} × that week)."
        )
    lines += ["", f"{result['seconds']:.0f} s; seed {result['seed']}."]
    return "\n".join(lines)

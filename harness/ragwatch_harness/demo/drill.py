"""The demo's regression drill: a degraded candidate on the baseline's items, the gate, the alerts.

After the demo's baseline offline eval, `run_drill` evaluates a candidate whose offline generator
invents and garbles more sentences (`CANDIDATE_FAULTS` on top of the configured ones) on the same
golden items, gates it against the baseline run by id, and names the alert rules of
`monitoring/rules/ragwatch.rules.yml` that fire. The candidate is pushed to its own Pushgateway
group (job + suite + app=<candidate>): a candidate's gauges must never replace production's group of
its suite.

With a Prometheus (`RAGWATCH_PROMETHEUS_URL`, which `make demo` starts), the alerts are read from
Prometheus' own `/api/v1/alerts`, as Prometheus evaluated the project's rules on the pushed gauges:
nothing is recomputed. Without one (no binary on the machine), `alerts_that_would_fire` reads the
rule file against the run's means instead, and says that it did.
"""

from __future__ import annotations

import json
import os
import re
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import yaml

from pipelines.core.records import gauge_name
from pipelines.core.settings import Settings
from pipelines.evaluation.outputs.push import PushedRun, push_run
from pipelines.evaluation.outputs.summary import RunSummary
from pipelines.evaluation.runs.finalize import finalize_offline_eval
from pipelines.evaluation.runs.judge_batch import judge_offline_batch
from pipelines.evaluation.runs.params import REFERENCE_TARGET, EvalParams
from pipelines.evaluation.runs.prepare import prepare_offline_eval
from pipelines.models.offline import FAULTS_ENV_PREFIX, OfflineFaults, configured_faults
from pipelines.stores.results import EvalRun, ResultsStore

CANDIDATE = "candidate-more-hallucination"
CANDIDATE_FAULTS = {"made_up": 0.25, "swapped": 0.10}
"""The candidate's answer faults: a model that invents a quarter of its sentences and garbles a
tenth."""
SCORE_ALERT = re.compile(
    r"^avg_over_time\((?P<gauge>rag_\w+_score)\{stratum=\"all\"\}\[[^\]]+\]\)\s*(?P<op>[<>]=?)\s*(?P<edge>[\d.]+)$"
)
GATE_ALERT = re.compile(r"^rag_eval_gate_passed\s*==\s*0$")


@dataclass(frozen=True)
class WouldFire:
    alert: str
    severity: str
    condition: str
    """The rule's condition with the run's value in it, e.g. `rag_faithfulness_score 0.62 <
    0.75`."""
    wait: str | None
    """The rule's `for:` window: how long the value must hold before it fires."""


def baseline_run(settings: Settings, target: str = REFERENCE_TARGET) -> EvalRun:
    store = ResultsStore.from_settings(settings)
    try:
        run = store.latest_run("offline", target, successful_only=True) if store.exists() else None
    finally:
        store.dispose()
    if run is None:
        raise LookupError(
            f"no offline run of {target} yet: run the offline eval first (the baseline of the drill)"
        )
    return run


def candidate_params(baseline: EvalRun, target: str = CANDIDATE) -> EvalParams:
    """The baseline's parameters (same golden version, subset and cut-offs), as a candidate gated
    against it."""
    fields = {k: v for k, v in baseline.params.items() if k in EvalParams.model_fields}
    _, _, version = baseline.dataset_version.partition("@")
    return EvalParams.model_validate(
        {
            **fields,
            "golden_version": version or fields.get("golden_version"),
            "target_name": target,
            "target_url": None,
            "baseline_run": baseline.run_id,
            "fail_on_gate": False,
        }
    )


@contextmanager
def raised_faults(**rates: float) -> Iterator[OfflineFaults]:
    """The offline backend's faults (process-wide, read from the environment) raised to at least
    `rates` for the duration; restored afterwards."""
    current = configured_faults()
    raised = {
        name: max(value, rates.get(name, 0.0)) for name, value in current.model_dump().items()
    }
    keys = {name: f"{FAULTS_ENV_PREFIX}{name.upper()}" for name in raised}
    saved = {key: os.environ.get(key) for key in keys.values()}
    try:
        for name, key in keys.items():
            os.environ[key] = repr(raised[name])
        yield configured_faults()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def run_drill(
    settings: Settings, *, logical_date: date | None = None
) -> tuple[RunSummary, EvalRun, OfflineFaults]:
    """Evaluate the degraded candidate against the latest reference run: its summary (gate rows with
    the paired differences), the baseline run and the candidate's fault rates."""
    baseline = baseline_run(settings)
    params = candidate_params(baseline)
    with raised_faults(**CANDIDATE_FAULTS) as faults:
        prepared = prepare_offline_eval(
            settings, params, logical_date=logical_date or baseline.logical_date
        )
        for start, end in prepared.batches:
            judge_offline_batch(settings, prepared.run_dir, start, end)
    return finalize_offline_eval(settings, prepared.run_dir), baseline, faults


def push_candidate(settings: Settings, summary: RunSummary) -> PushedRun:
    """The candidate's gauges in a group of their own (app = the candidate's name), beside
    production's."""
    return push_run(settings, summary, app=summary.target)


@dataclass(frozen=True)
class PrometheusAlert:
    alert: str
    state: str
    """`firing`, or `pending` (the condition holds, its `for:` window has not passed yet)."""
    labels: dict
    summary: str
    active_at: str | None


def prometheus_alerts(
    prometheus_url: str, *, app: str | None = None, wait_s: float = 60.0, timeout_s: float = 5.0
) -> list[PrometheusAlert]:
    """The alerts Prometheus evaluates now, from its `/api/v1/alerts` (those of `app` only, when
    given), waiting up to `wait_s` for one to fire: Prometheus must scrape the pushed gauges and
    evaluate its rules first."""
    deadline = time.monotonic() + wait_s
    while True:
        with urllib.request.urlopen(
            f"{prometheus_url.rstrip('/')}/api/v1/alerts", timeout=timeout_s
        ) as response:
            payload = json.load(response)
        alerts = [
            PrometheusAlert(
                a["labels"].get("alertname", "?"),
                a["state"],
                a["labels"],
                (a.get("annotations") or {}).get("summary", ""),
                a.get("activeAt"),
            )
            for a in payload["data"]["alerts"]
            if app is None or a["labels"].get("app") == app
        ]
        if any(a.state == "firing" for a in alerts) or time.monotonic() > deadline:
            return sorted(alerts, key=lambda a: (a.state != "firing", a.alert))
        time.sleep(1.0)


def alerts_that_would_fire(summary: RunSummary, rules_path: Path) -> list[WouldFire]:
    """Without a Prometheus: the rules of a rule file that this run's gauges would trigger,
    recomputed here: score alerts on `avg_over_time(rag_<metric>_score{stratum="all"}[…]) <op>
    <edge>` read against the run's pooled means (as if the value held for the averaging window), and
    the gate alert. Rules of other shapes (staleness, push failures) are about the pipeline, not a
    run's scores, and are not evaluated."""
    means = {gauge_name(row.metric): row.mean for row in summary.overall if row.mean is not None}
    firing = []
    for group in yaml.safe_load(rules_path.read_text(encoding="utf-8")).get("groups", []):
        for rule in group.get("rules", []):
            if "alert" not in rule:
                continue
            expr = " ".join(str(rule["expr"]).split())
            severity = (rule.get("labels") or {}).get("severity", "")
            if (score := SCORE_ALERT.match(expr)) and score["gauge"] in means:
                value, edge, op = means[score["gauge"]], float(score["edge"]), score["op"]
                if _compare(value, op, edge):
                    firing.append(
                        WouldFire(
                            rule["alert"],
                            severity,
                            f"{score['gauge']} {value:.3f} {op} {edge:g}",
                            rule.get("for"),
                        )
                    )
            elif GATE_ALERT.match(expr) and summary.gate_passed is False:
                firing.append(
                    WouldFire(
                        rule["alert"], severity, "rag_eval_gate_passed 0 == 0", rule.get("for")
                    )
                )
    return firing


def _compare(value: float, op: str, edge: float) -> bool:
    return {"<": value < edge, "<=": value <= edge, ">": value > edge, ">=": value >= edge}[op]

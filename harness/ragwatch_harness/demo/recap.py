"""What `make demo` did, gathered for its last screen: the steps that ran, the drill, the online
day, the alerts.

The demo's commands write their full tables to its log; this reads back what they left (the
published sample manifests, the golden release, the results DB, the drill's alerts) so that the last
screen is built from the same records a person would open, not from the commands' printed output."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import date, timedelta

from pipelines.core.files import atomic_write_text
from pipelines.core.settings import Settings
from pipelines.evaluation.outputs.summary import RunSummary
from pipelines.evaluation.runs.params import REFERENCE_TARGET
from pipelines.stores.results import ResultsStore
from ragwatch_harness.demo.drill import CANDIDATE
from ragwatch_harness.demo.seed import DESIGNED_COVERAGE

PAGE_URL = "http://127.0.0.1:8080/ragwatch/"
"""The ragwatch page of the `make up` stack (plugins/ragwatch_plugin.py); `make demo` starts no web
server."""


@dataclass(frozen=True)
class DrillAlert:
    alert: str
    state: str
    """`firing`, `pending`, or `would fire` (recomputed from the rules without a Prometheus)."""
    detail: str


@dataclass(frozen=True)
class DrillAlerts:
    source: str
    """Who evaluated the rules: a Prometheus URL, or the rule file read here."""
    alerts: list[DrillAlert] = field(default_factory=list)


@dataclass(frozen=True)
class DemoRecap:
    ran: list[str]
    """One line per step that left a record, in the order the demo runs them."""
    baseline: RunSummary | None
    drill: RunSummary | None
    online: RunSummary | None
    alerts: DrillAlerts | None
    page_url: str = PAGE_URL
    log: str | None = None
    designed_coverage: float | None = None
    """The true coverage the demo's traffic was made with, printed beside the measured one."""


def _alerts_path(settings: Settings):
    return settings.home / "demo" / "drill-alerts.json"


def save_drill_alerts(settings: Settings, alerts: DrillAlerts) -> None:
    """Kept under RAGWATCH_HOME for the recap: Prometheus stops with the demo, its answer must
    outlive it."""
    path = _alerts_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"source": alerts.source, "alerts": [vars(a) for a in alerts.alerts]}
    atomic_write_text(path, json.dumps(payload, indent=1))


def load_drill_alerts(settings: Settings) -> DrillAlerts | None:
    path = _alerts_path(settings)
    if not path.exists():
        return None
    payload = json.loads(path.read_text(encoding="utf-8"))
    return DrillAlerts(payload["source"], [DrillAlert(**a) for a in payload["alerts"]])


def _summary(
    settings: Settings, store: ResultsStore, suite: str, target: str | None
) -> RunSummary | None:
    from pipelines.evaluation.outputs.summary import stored_summary

    run = store.latest_run(suite, target=target)
    return stored_summary(settings, store, run) if run else None


def _sampled(settings: Settings, day: date) -> str | None:
    from pipelines.traces.steps import published_counts

    try:
        counts = published_counts(settings, day)
    except FileNotFoundError:
        return None
    return f"trace_sampling for {day}: {counts.sampled:,} of {counts.population:,} traces sampled, {counts.quarantined} quarantined"


def _golden(settings: Settings) -> str | None:
    from pipelines.golden.params import load_golden_params
    from pipelines.golden.steps import paths
    from pipelines.stores.partitions import read_manifest

    name = load_golden_params(settings).name
    manifest_path = paths(settings, name).released_manifest
    if not manifest_path.exists():
        return None
    manifest = read_manifest(manifest_path)
    return f"golden set {name} {manifest['version']}: {manifest['items']} items"


def demo_recap(settings: Settings, day: date, *, log: str | None = None) -> DemoRecap:
    """The recap of a demo whose online eval scored `day` (yesterday, in `make demo`)."""
    ran = []
    sampled = [
        s for s in (_sampled(settings, day - timedelta(days=1)), _sampled(settings, day)) if s
    ]
    ran += sampled
    if golden := _golden(settings):
        ran.append(f"golden_build: {golden}")
    store = ResultsStore.from_settings(settings)
    try:
        if not store.exists():
            baseline = drill = online = None
        else:
            baseline = _summary(settings, store, "offline", REFERENCE_TARGET)
            drill = _summary(settings, store, "offline", CANDIDATE)
            online = _summary(settings, store, "online", None)
    finally:
        store.dispose()
    if baseline:
        ran.append(
            f"offline_eval: {baseline.target} on {baseline.items} items of {baseline.dataset_version}"
        )
    if drill:
        ran.append(f"regression drill: {drill.target} on the same items")
    if online:
        ran.append(
            f"online_eval: {online.items:,} of the day's {online.day_traces or 0:,} sampled traces judged"
        )
    return DemoRecap(
        ran=ran,
        baseline=baseline,
        drill=drill,
        online=online,
        alerts=load_drill_alerts(settings),
        log=log,
        designed_coverage=DESIGNED_COVERAGE,
    )

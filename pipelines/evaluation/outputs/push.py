"""Push a run's aggregates to the Prometheus Pushgateway (or a textfile when none is configured).

Only the newest run of a suite and target is pushed: a push replaces the group, so a backfilled
past day must not overwrite today's gauges (its scores are in the results DB).

One group per suite and target (job + suite + target, plus app for online evals of one app),
replaced as a whole with PUT: strata that disappeared from a run disappear from Prometheus too, and
a run of another target (a candidate URL) never replaces the gauges of the newest run of this one.
The grouping key never holds a run id: the Pushgateway keeps every group forever, so per-run groups
would pile up and Prometheus would see stale runs as current.

`push_scores` does not raise when the push fails: it returns a PushResult saying why (and logs it);
`push_run`, the step a task calls, raises then so Airflow retries, and says how to push again by
hand. Prometheus should alert on `push_time_seconds` staleness, which catches a pipeline that
stopped pushing for any reason.
"""

from __future__ import annotations

import json
import logging
import re
import time
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from operator import attrgetter
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlsplit, urlunsplit

from prometheus_client import CollectorRegistry, Gauge, push_to_gateway, write_to_textfile
from prometheus_client.exposition import basic_auth_handler, default_handler
from pydantic import BaseModel

from pipelines.core import inputs
from pipelines.core.records import METRICS, gauge_name
from pipelines.core.redact import redact_text, redact_url
from pipelines.core.settings import Settings
from pipelines.evaluation.outputs.summary import (
    JudgeNoiseRow,
    JudgeTrustRow,
    RunSummary,
    gate_rows,
    golden_coverage,
    judge_noise_rows,
    judge_trust,
)
from pipelines.evaluation.results.coverage import GoldenCoverage
from pipelines.evaluation.results.run import RunCost
from pipelines.evaluation.statistics.aggregates import Aggregate, aggregate
from pipelines.evaluation.statistics.diagnose import CONTEXT_PRECISION as DIAGNOSED_PRECISION
from pipelines.stores.results import ResultsStore

log = logging.getLogger(__name__)
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True)
class PushResult:
    ok: bool
    mode: Literal["pushgateway", "textfile"]
    destination: str
    """The Pushgateway URL, or the textfile path."""
    job: str
    grouping_key: dict[str, str] = field(default_factory=dict)
    samples: int = 0
    error: str | None = None


def grouping_key(suite: str, target: str | None = None, app: str | None = None) -> dict[str, str]:
    # Target names are checked names (pipelines.core.inputs): never a URL, so never a credential in
    # a label.
    return {
        "suite": suite,
        **({"target": inputs.target_name(target)} if target else {}),
        **({"app": app} if app else {}),
    }


def build_registry(
    aggregates: Iterable[Aggregate],
    *,
    suite: str,
    target: str | None = None,
    app: str | None = None,
    gate_passed: bool | None = None,
    gate_catches: Mapping[str, float] | None = None,
    succeeded_at: datetime | float | None = None,
    judge: Iterable[JudgeTrustRow] = (),
    cost: RunCost | None = None,
    judge_noise: Iterable[JudgeNoiseRow] = (),
    coverage: GoldenCoverage | None = None,
) -> CollectorRegistry:
    """The gauges of one run. Labels repeat the grouping key so a textfile reads the same as the
    gateway."""
    registry = CollectorRegistry()
    base = grouping_key(suite, target, app)
    names = list(base)
    items = Gauge(
        "rag_eval_items",
        "Items evaluated (ok + failed + skipped)",
        [*names, "stratum", "metric"],
        registry=registry,
    )
    failed = Gauge(
        "rag_eval_failed_items",
        "Items whose score failed (not in the mean)",
        [*names, "stratum", "metric"],
        registry=registry,
    )
    scores: dict[str, Gauge] = {}
    for agg in aggregates:
        items.labels(**base, stratum=agg.stratum, metric=agg.metric).set(agg.n_items)
        failed.labels(**base, stratum=agg.stratum, metric=agg.metric).set(agg.n_failed)
        if agg.mean is None:
            continue  # no ok score: absent, never 0
        name = gauge_name(agg.metric)
        if name not in scores:
            help_text = (
                f"Mean of the ok scores of {agg.metric}: {METRICS.get(agg.metric, agg.metric)}"
            )
            scores[name] = Gauge(name, help_text, [*names, "stratum"], registry=registry)
        scores[name].labels(**base, stratum=agg.stratum).set(agg.mean)
    if gate_passed is not None:
        Gauge(
            "rag_eval_gate_passed",
            "1 when the run passed the regression gate",
            names,
            registry=registry,
        ).labels(**base).set(int(gate_passed))
    if gate_catches:
        catches = Gauge(
            "rag_eval_gate_catches",
            "The smallest drop of a gated metric's mean that the run's regression "
            "gate fails 90 % of the time at its n: what a pass can hide",
            [*names, "metric"],
            registry=registry,
        )
        for metric, drop in gate_catches.items():
            catches.labels(**base, metric=metric).set(drop)
    if cost is not None:
        _cost_gauges(cost, base, registry)
    last_success = Gauge(
        "rag_eval_last_success_timestamp_seconds",
        "When the last successful eval of this suite finished",
        names,
        registry=registry,
    )
    if isinstance(succeeded_at, datetime):
        succeeded_at = succeeded_at.timestamp()
    last_success.labels(**base).set(time.time() if succeeded_at is None else succeeded_at)
    add_judge_gauges(registry, base, judge)
    add_judge_noise_gauges(registry, base, judge_noise)
    if coverage is not None:
        add_coverage_gauges(registry, base, coverage)
    return registry


def add_judge_noise_gauges(
    registry: CollectorRegistry, base: dict[str, str], rows: Iterable[JudgeNoiseRow]
) -> None:
    """The test-retest gauges per retested metric; absent (never 0) with too few retests or an
    undefined figure."""
    rows = [r for r in rows if r.enough]
    if not rows:
        return
    gauges = {
        "rag_judge_noise_share": (
            "Judge-noise variance (half the mean squared test-retest difference) / "
            "the per-item variance of the metric: the judge's share of the mean's interval",
            attrgetter("noise_share"),
        ),
        "rag_judge_retest_icc": (
            "Intraclass correlation ICC(1,1) of the judge's two judgements of the retested items",
            attrgetter("icc"),
        ),
        "rag_judge_retest_items": (
            "Items judged twice (both judgements ok): the n of the retest gauges",
            attrgetter("n_retested"),
        ),
    }
    _gauges_per_row(registry, base, rows, "metric", gauges)


def _gauges_per_row(
    registry: CollectorRegistry,
    base: dict[str, str],
    rows: list,
    label: str,
    gauges: dict[str, tuple[str, Callable[[Any], float | None]]],
) -> None:
    """One gauge per entry (name: help, value of a row), a series per row labelled by the row's
    `label` field; a row whose value is None has no series (absent, never 0)."""
    names = [*base, label]
    for name, (help_text, value_of) in gauges.items():
        gauge = Gauge(name, help_text, names, registry=registry)
        for row in rows:
            if (value := value_of(row)) is not None:
                gauge.labels(**base, **{label: getattr(row, label)}).set(value)


def add_coverage_gauges(
    registry: CollectorRegistry, base: dict[str, str], coverage: GoldenCoverage
) -> None:
    """The golden set's coverage of the day's traffic per app/language stratum and "all", with its
    interval's bounds; absent (never 0) when it could not be measured."""
    if coverage.status != "ok":
        return
    gauges = {
        "rag_golden_coverage_ratio": (
            "Share of the day's traffic whose question has a golden "
            f"passage that answers it: the share matched (same language, {_threshold_help(coverage)}) "
            "corrected for the matcher's true- and false-match rates; interval n = distinct questions",
            attrgetter("ratio"),
        ),
        "rag_golden_coverage_ratio_ci_low": (
            "Lower bound of its 95 % interval from the day's questions (the rates as calibrated)",
            attrgetter("ci_low"),
        ),
        "rag_golden_coverage_ratio_ci_high": (
            "Upper bound of its 95 % interval from the day's questions (the rates as calibrated)",
            attrgetter("ci_high"),
        ),
    }
    _gauges_per_row(registry, base, coverage.strata, "stratum", gauges)


def _threshold_help(coverage: GoldenCoverage) -> str:
    """Whose threshold the gauge rests on: one calibrated on user questions, or the user's own
    setting."""
    t = coverage.threshold
    if t is not None and t.method == "setting":
        return (
            f"{t.signal} >= {t.value:.3f}, the user's RAGWATCH_COVERAGE_THRESHOLD, not calibrated"
        )
    if t is not None and t.method == "calibrated":
        return f"{t.signal} >= {t.value:.3f}, calibrated on {t.positives} user questions of the golden set"
    return "similarity >= the threshold"


def add_judge_gauges(
    registry: CollectorRegistry, base: dict[str, str], rows: Iterable[JudgeTrustRow]
) -> None:
    """The judge audit's gauges per audited metric; absent (never 0) without a label, κ absent when
    undefined."""
    rows = [r for r in rows if r.labels]
    if not rows:
        return
    gauges = {
        "rag_judge_audit_labels": (
            "Judged items people labelled so far (judge audit)",
            attrgetter("labels"),
        ),
        "rag_judge_agreement_kappa": (
            "Cohen's kappa of the judge's 0/1 verdicts vs people's labels",
            attrgetter("kappa"),
        ),
        "rag_judge_trusted": (
            "1 when the judge is trustworthy for the metric (kappa >= 0.6 on >= 20 labels)",
            lambda row: int(bool(row.trusted)),
        ),
    }
    _gauges_per_row(registry, base, rows, "metric", gauges)


def _cost_gauges(cost: RunCost, base: dict[str, str], registry: CollectorRegistry) -> None:
    """The run's model usage per stage and metric (models added up: each stage × metric is served by
    one role). Stages and metrics are a handful of fixed names, so the series stay few."""
    names = [*base, "stage", "metric"]
    requests = Gauge(
        "rag_eval_llm_requests",
        "Requests the run sent to the model servers (every attempt)",
        names,
        registry=registry,
    )
    hits = Gauge(
        "rag_eval_llm_cache_hits",
        "Model calls of the run the LLM cache answered (no request sent)",
        names,
        registry=registry,
    )
    tokens = Gauge(
        "rag_eval_llm_tokens",
        "Tokens the model servers reported for the run's requests (`usage`)",
        [*names, "kind"],
        registry=registry,
    )
    seconds = Gauge(
        "rag_eval_llm_seconds",
        "Summed wall time of the run's requests, sending to reply",
        names,
        registry=registry,
    )
    summed: dict[tuple[str, str], list[float]] = {}
    for row in cost.rows:
        counts = summed.setdefault((row.stage, row.metric), [0, 0, 0, 0, 0.0])
        for i, value in enumerate(
            (
                row.requests,
                row.cache_hits,
                row.prompt_tokens,
                row.completion_tokens,
                row.llm_seconds,
            )
        ):
            counts[i] += value
    if cost.budget is not None:
        Gauge(
            "rag_eval_llm_budget_skipped_scores",
            "Scores skipped because the run's token budget was spent",
            list(base),
            registry=registry,
        ).labels(**base).set(cost.skipped_for_budget)
    for (stage, metric), (sent, hit, prompt, completion, llm_s) in summed.items():
        labels = dict(base, stage=stage, metric=metric)
        requests.labels(**labels).set(sent)
        hits.labels(**labels).set(hit)
        tokens.labels(**labels, kind="prompt").set(prompt)
        tokens.labels(**labels, kind="completion").set(completion)
        seconds.labels(**labels).set(llm_s)


def push_scores(
    settings: Settings,
    aggregates: Iterable[Aggregate],
    *,
    suite: str,
    target: str | None = None,
    app: str | None = None,
    timeout_s: float = 10.0,
    **gauges,
) -> PushResult:
    """Replace the suite's (and target's) group on the configured Pushgateway, or write
    `metrics/<job>-<suite>-<target>.prom` under home. `gauges` are `build_registry`'s other
    keywords: the gate, the judge's trust and noise, the cost, the coverage, when the run
    succeeded."""
    registry = build_registry(aggregates, suite=suite, target=target, app=app, **gauges)
    samples = sum(len(m.samples) for m in registry.collect())
    job, key = settings.pushgateway_job, grouping_key(suite, target, app)
    if settings.pushgateway_url:
        shown = redact_url(
            settings.pushgateway_url
        )  # what results and logs say: never the gateway's credentials
        common = dict(mode="pushgateway", destination=shown, job=job, grouping_key=key)
        try:
            gateway, handler = _gateway_and_handler(settings.pushgateway_url)
            push_to_gateway(
                gateway,
                job=job,
                registry=registry,
                grouping_key=key,
                timeout=timeout_s,
                handler=handler,
            )
        except (OSError, ValueError) as exc:  # URLError/HTTPError/timeouts are OSErrors
            error = redact_text(f"push to {shown} failed: {exc}")
            log.error("%s (job=%s, grouping key %s)", error, job, key)
            return PushResult(ok=False, **common, error=error)
        log.info("pushed %d samples to %s (job=%s, grouping key %s)", samples, shown, job, key)
        return PushResult(ok=True, **common, samples=samples)
    path = textfile_path(settings.home, job, suite, app, target)
    common = dict(mode="textfile", destination=str(path), job=job, grouping_key=key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_to_textfile(
            str(path), registry
        )  # writes a temp file and renames it: readers never see half
    except OSError as exc:
        error = f"writing {path} failed: {exc}"
        log.error(error)
        return PushResult(ok=False, **common, error=error)
    log.warning(
        "no Pushgateway configured (RAGWATCH_PUSHGATEWAY_URL): wrote %d samples to %s instead",
        samples,
        path,
    )
    return PushResult(ok=True, **common, samples=samples)


def _gateway_and_handler(url: str):
    """A gateway URL with `user:password@` becomes HTTP basic auth: the credentials never sit in a
    request URL."""
    parts = urlsplit(url if "://" in url else f"http://{url}")
    if parts.username is None:
        return url, default_handler
    user, password = unquote(parts.username), unquote(parts.password or "")
    bare = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))

    def handler(url, method, timeout, headers, data):
        return basic_auth_handler(url, method, timeout, headers, data, user, password)

    return bare, handler


def textfile_path(
    home: Path, job: str, suite: str, app: str | None = None, target: str | None = None
) -> Path:
    name = "-".join(part for part in (job, suite, target, app) if part)
    return home.resolve() / "metrics" / (_UNSAFE.sub("_", name) + ".prom")


def read_back(gateway_url: str, *, timeout_s: float = 5.0) -> list[dict]:
    """Every group the Pushgateway holds, from its `/api/v1/metrics`:
    `[{"labels": {job, suite, ...}, "metrics": {name: [{"labels": {...}, "value": float}]}}]`."""
    base = gateway_url if "://" in gateway_url else f"http://{gateway_url}"
    with urllib.request.urlopen(
        f"{base.rstrip('/')}/api/v1/metrics", timeout=timeout_s
    ) as response:
        payload = json.load(response)
    groups = []
    for group in payload["data"]:
        metrics = {
            name: [
                {"labels": m["labels"], "value": float(m["value"])}
                for m in family.get("metrics", [])
            ]
            for name, family in group.items()
            if isinstance(family, dict) and "metrics" in family
        }
        groups.append({"labels": group["labels"], "metrics": metrics})
    return groups


CONTEXT_PRECISION = "context_precision"
PUSHED_AS = {DIAGNOSED_PRECISION: CONTEXT_PRECISION}
"""Stored metrics pushed under another name. The judged share of the chunks given that are useful
(`context_precision_share`) is the operating context precision: `rag_context_precision_score`, the
gauge of the alert `RagContextPrecisionLow` (< 0.60), as in the diagnosis. Never the id-based
precision@k (one gold chunk caps it at 1/k: the alert would always fire) nor ragas' rank-weighted
`context_precision_ranked` (its own gauge). Online traces have no reference answer: no judged
context precision, no gauge."""


def as_pushed(aggregates: list[Aggregate]) -> list[Aggregate]:
    """The aggregates under their gauges' names (PUSHED_AS)."""
    return [
        replace(a, metric=PUSHED_AS[a.metric]) if a.metric in PUSHED_AS else a for a in aggregates
    ]


class PushedRun(BaseModel):
    """What the push step did: where the gauges went, or why this run owns none."""

    destination: str | None = None
    mode: Literal["pushgateway", "textfile"] | None = None
    samples: int = 0
    skipped: str | None = None


def push_run(settings: Settings, summary: RunSummary, *, app: str | None = None) -> PushedRun:
    """Push a saved run's aggregates (re-read from the results DB), if it is the newest run of its
    target."""
    return push_stored_run(settings, summary.run_id, app=app)


def push_stored_run(settings: Settings, run_id: str, *, app: str | None = None) -> PushedRun:
    """Push the run saved under `run_id` (`ragwatch eval push`), if it is the newest run of its
    target; LookupError when the results DB has no such run."""
    store = ResultsStore.from_settings(settings)
    try:
        run = store.get_run(run_id)
        if run is None:
            raise LookupError(f"no run {run_id} in the results DB")
        latest = store.latest_run(run.suite, run.target)
        if latest is None or latest.run_id != run_id:
            newer = latest.logical_date.isoformat() if latest else "none"
            return PushedRun(skipped=f"a newer {run.suite} run ({newer}) owns the gauges")
        aggregates = as_pushed(aggregate(store.scores(run_id)))
    finally:
        store.dispose()
    catches = {
        row.metric: row.detectable_drop
        for row in gate_rows(latest.gate)
        if row.detectable_drop is not None
    }
    result = push_scores(
        settings,
        aggregates,
        suite=run.suite,
        target=run.target,
        app=app,
        gate_passed=latest.gate_passed,
        gate_catches=catches,
        succeeded_at=latest.finished_at or datetime.now(timezone.utc),
        judge=judge_trust(latest.params.get("judge_audit")),
        judge_noise=judge_noise_rows(latest.params.get("judge_noise")),
        cost=RunCost.model_validate(latest.cost) if latest.cost else None,
        coverage=golden_coverage(latest.params),
    )
    if not result.ok:
        raise RuntimeError(
            f"push failed: {result.error}. The scores are safe in the results DB: `ragwatch eval push --run "
            f"{run_id}{f' --app {app}' if app else ''}` pushes them again (an Airflow push task retries by itself)."
        )
    return PushedRun(destination=result.destination, mode=result.mode, samples=result.samples)

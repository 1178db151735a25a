"""The ragwatch page inside Airflow: the latest eval run per suite and target, and its report.

A FastAPI app that the `RagwatchPlugin` (plugins/ragwatch_plugin.py) mounts on the Airflow
api-server under `/ragwatch`, with a nav entry in the Airflow UI:

    GET /ragwatch/                    HTML: per suite and target, the latest run and its scores
    GET /ragwatch/api/latest          the same as JSON
    GET /ragwatch/reports/{run_id}    the run's self-contained HTML report

Inside Airflow the page also lists the ragwatch DAG runs still in progress (their task states), so
the first hour of a new stack shows what is running instead of an empty page.

It reads the results DB that the eval DAGs write through the results store
(`pipelines.stores.results.ResultsStore`: RAGWATCH_RESULTS_URL, else SQLite under RAGWATCH_HOME) and
never writes to it. Aggregates are computed and numbers formatted exactly as the HTML report does
(`pipelines.evaluation.statistics.aggregates.aggregate`, `pipelines.evaluation.outputs.formatting`),
so the page and the report can never disagree. Every text is escaped (Jinja autoescape): targets,
dataset versions and strata come from configuration and data a browser must not execute.

Every Airflow component imports the plugins folder (scheduler, dag-processor, each task
process), so this module imports only what building the app needs; Airflow's auth is imported
on the first request, inside the api-server.
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any, get_args
from urllib.parse import quote

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse
from jinja2 import Environment
from sqlalchemy.engine import make_url

from pipelines.core.records import Suite
from pipelines.core.settings import Settings, load_settings
from pipelines.core.workspace import Workspace
from pipelines.evaluation.outputs.formatting import interval, number
from pipelines.evaluation.statistics.aggregates import Aggregate, aggregate
from pipelines.evaluation.statistics.scores import LOWER_IS_BETTER, OVERALL
from pipelines.models.offline import OFFLINE_MODEL
from pipelines.stores.results import EvalRun, ResultsStore

SUITES: tuple[str, ...] = get_args(Suite)

NEXT_STEP = {
    "offline": "Run the offline eval DAG (`offline_eval`): it scores the golden test split that `golden_build` "
    "published, e.g. `scripts/airflow.sh dags test offline_eval`.",
    "online": "Run `trace_sampling`, then the online eval DAG (`online_eval`) for the same day: it scores the "
    "traces sampled that day, e.g. `scripts/airflow.sh dags test online_eval`.",
}
"""What to run when a suite has no run yet: the page is often the first thing a new team opens."""

NEXT_STEP_IN_AIRFLOW = {
    "offline": "Trigger `offline_eval` from the Dags page once `golden_build` has published a golden set: it "
    "scores the golden test split.",
    "online": "Trigger `trace_sampling`, then `online_eval` for the same day from the Dags page: it scores the "
    "traces sampled that day.",
}
"""The same advice where the page is served by Airflow itself: the DAGs are one click away."""

SUITE_DAGS = {
    "offline": ("golden_build", "offline_eval"),
    "online": ("trace_sampling", "online_eval"),
}
"""The DAGs whose runs lead to a suite's first scores, in the order they run."""


@dataclass(frozen=True)
class ActiveRun:
    """A DAG run that is queued or running, as the Airflow metadata DB has it now."""

    dag_id: str
    run_id: str
    logical_date: str | None
    state: str
    started_at: str | None
    covers: str | None = None
    """The days the run evaluates (its data interval; for a run triggered without a logical date,
    the interval its schedule infers), which is not the run's own date: a daily eval run on the 7th
    covers the 6th."""
    task_states: dict[str, int] = field(default_factory=dict)
    """Task instances (mapped ones each count) per state; `none` = not yet scheduled."""
    running_tasks: list[str] = field(default_factory=list)


ActiveRuns = Callable[[tuple[str, ...]], list[ActiveRun]]

PAGE_SECURITY_HEADERS = {
    # The page has no script and loads nothing; the Airflow UI frames it (a nav external view).
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'self'",
    "X-Content-Type-Options": "nosniff",
}
REPORT_SECURITY_HEADERS = {
    # A report holds model output and trace text. It is served from the Airflow origin, where the
    # session cookie would let a script call the Airflow API: `sandbox` gives it an opaque origin
    # with scripts off, whatever a crafted file contains.
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox; "
    "frame-ancestors 'self'",
    "X-Content-Type-Options": "nosniff",
}

Authorize = Callable[[Request], Awaitable[None]]


class ResultsReader:
    """Read-only access to the results DB behind one settings factory.

    Engines are kept per URL (a request must not open a new pool); aggregates are kept per run
    attempt, because a bootstrap over a big run costs seconds and a saved run never changes
    (a rerun replaces it under a new `created_at`).
    """

    def __init__(
        self, settings_factory: Callable[[], Settings] = load_settings, *, cached_runs: int = 64
    ):
        self.settings_factory = settings_factory
        self._stores: dict[str, ResultsStore] = {}
        self._aggregates: OrderedDict[tuple[str, str, str], list[Aggregate]] = OrderedDict()
        self._cached_runs = cached_runs
        self._lock = threading.Lock()

    def settings(self) -> Settings:
        return self.settings_factory()

    def store(self, settings: Settings) -> ResultsStore | None:
        """The store, or None while no eval has written anything (no file, no tables)."""
        url = settings.resolved_results_url
        parsed = make_url(url)
        if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
            if not Path(parsed.database).exists():
                return None  # opening it would create an empty file on behalf of a read-only page
        with self._lock:
            store = self._stores.get(url)
            if store is None:
                store = self._stores[url] = ResultsStore(url)
        return store if store.exists() else None

    def latest_runs(self, settings: Settings) -> dict[str, list[EvalRun]]:
        """Per suite, the latest run of each target (any status: a failed latest run is news)."""
        latest: dict[str, list[EvalRun]] = {suite: [] for suite in SUITES}
        store = self.store(settings)
        if store is not None:
            latest.update(store.latest_per_target())
        return latest

    def aggregates(self, settings: Settings, run: EvalRun) -> list[Aggregate]:
        key = (settings.resolved_results_url, run.run_id, run.created_at.isoformat())
        with self._lock:
            if key in self._aggregates:
                self._aggregates.move_to_end(key)
                return self._aggregates[key]
        store = self.store(settings)
        found = aggregate(store.scores(run.run_id)) if store is not None else []
        with self._lock:
            self._aggregates[key] = found
            while len(self._aggregates) > self._cached_runs:
                self._aggregates.popitem(last=False)
        return found

    def run(self, settings: Settings, run_id: str) -> EvalRun | None:
        store = self.store(settings)
        return store.get_run(run_id) if store is not None else None


class OutsideReportsDir(ValueError):
    """A stored report path that resolves outside the configured reports directory."""


def resolve_report(settings: Settings, stored: str) -> Path:
    """The report file a run row points at, refusing anything outside the workspace's reports
    folder.

    Relative paths are taken from the data workspace (the way partitions are recorded). The path
    is resolved first, so `..` segments and symlinks that leave the reports directory are refused
    too: a results DB row must never turn this page into a file server for the host.
    """
    workspace = Workspace.from_settings(settings)
    candidate = Path(stored)
    if not candidate.is_absolute():
        candidate = workspace.root / candidate
    real = candidate.resolve()
    root = workspace.reports_dir.resolve()
    if not real.is_relative_to(root):
        raise OutsideReportsDir(f"report path {stored!r} is outside the reports directory {root}")
    return real


def overview(
    reader: ResultsReader,
    settings: Settings,
    report_url: Callable[[str], str],
    active_runs: ActiveRuns | None = None,
) -> dict[str, Any]:
    """The JSON document of `/api/latest`; the HTML page renders the same document.

    `active_runs` (inside Airflow: `airflow_active_runs`) adds each suite's DAG runs in progress."""
    advice = NEXT_STEP if active_runs is None else NEXT_STEP_IN_AIRFLOW
    suites: dict[str, Any] = {}
    for suite, runs in reader.latest_runs(settings).items():
        in_progress = active_runs(SUITE_DAGS.get(suite, ())) if active_runs is not None else []
        suites[suite] = {
            "runs": [
                _run_view(run, reader.aggregates(settings, run), settings, report_url)
                for run in runs
            ],
            "in_progress": [asdict(run) for run in in_progress],
            "next_step": None
            if runs or in_progress
            else advice.get(suite, f"Run an eval of suite {suite!r}."),
        }
    return {"suites": suites}


def _run_view(
    run: EvalRun, aggs: list[Aggregate], settings: Settings, report_url: Callable[[str], str]
) -> dict[str, Any]:
    gate = run.gate if isinstance(run.gate, dict) else {}
    return {
        "run_id": run.run_id,
        "suite": run.suite,
        "target": run.target,
        "logical_date": run.logical_date.isoformat(),
        "dataset_version": run.dataset_version,
        "status": run.status,
        "gate": "no gate"
        if run.gate_passed is None
        else ("passed" if run.gate_passed else "failed"),
        "gate_summary": gate.get("summary"),
        "judge_model": run.judge_model,
        "generator_model": run.generator_model,
        "offline_backend": OFFLINE_MODEL in (run.judge_model, run.generator_model),
        "finished_at": _iso(run.finished_at),
        "report_url": report_url(run.run_id) if _has_report(settings, run) else None,
        "metrics": [_agg_view(a) for a in aggs if a.stratum == OVERALL],
        "strata": [_agg_view(a) for a in aggs if a.stratum != OVERALL],
    }


def _agg_view(agg: Aggregate) -> dict[str, Any]:
    return {
        "metric": agg.metric,
        "stratum": agg.stratum,
        "higher_is_better": agg.metric not in LOWER_IS_BETTER,
        "n": agg.n,
        "n_failed": agg.n_failed,
        "n_skipped": agg.n_skipped,
        "mean": agg.mean,
        "ci_low": agg.ci_low,
        "ci_high": agg.ci_high,
        # The method and level as computed for this metric, so the page cannot name another.
        "ci_method": agg.ci_method,
        "confidence": agg.confidence,
    }


def _covered_days(
    dag_id: str, start: datetime | None, end: datetime | None, run_after: datetime | None
) -> str | None:
    """'2026-12-06', or '2026-11-30 – 2026-12-06' for a longer interval (its end is exclusive)."""
    if start is None or end is None:
        from airflow.models.serialized_dag import SerializedDagModel

        dag = SerializedDagModel.get_dag(dag_id)
        if dag is None or run_after is None:
            return None
        # what the run covers (plugins/ragwatch_airflow/intervals.py): the schedule's latest
        # complete interval
        try:
            start, end = dag.timetable.infer_manual_data_interval(run_after=run_after)
        except (AttributeError, TypeError, ValueError):
            return None
    last = end - timedelta(microseconds=1) if end > start else end
    return (
        start.date().isoformat()
        if last.date() == start.date()
        else f"{start.date()} – {last.date()}"
    )


def _has_report(settings: Settings, run: EvalRun) -> bool:
    if not run.report_path:
        return False
    try:
        return resolve_report(settings, run.report_path).is_file()
    except OutsideReportsDir:
        return False  # no link; the report route refuses it with the reason


def _iso(value: date | datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def create_app(
    settings_factory: Callable[[], Settings] = load_settings,
    *,
    authorize: Authorize | None = None,
    login_url: Callable[[str], str] | None = None,
    active_runs: ActiveRuns | None = None,
) -> FastAPI:
    """The app. `authorize` guards every route and raises 401/403 (inside Airflow:
    `require_airflow_reader`); `login_url(next_url)` is where a browser without a session goes;
    `active_runs(dag_ids)` lists the DAG runs in progress (inside Airflow:
    `airflow_active_runs`)."""
    reader = ResultsReader(settings_factory)

    async def authorized(request: Request) -> None:
        if authorize is not None:
            await authorize(request)

    async def authorized_person(request: Request) -> None:
        # A person opening /ragwatch/ without a session gets the login page, then comes back here;
        # API clients keep the plain 401.
        try:
            await authorized(request)
        except HTTPException as exc:
            if (
                exc.status_code == 401
                and login_url is not None
                and "text/html" in request.headers.get("accept", "")
            ):
                raise HTTPException(
                    307, "login required", headers={"Location": login_url(str(request.url))}
                ) from None
            raise

    app = FastAPI(
        title="ragwatch",
        description="Latest ragwatch eval scores and reports.",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.state.reader = reader

    def base_path(request: Request) -> str:
        # root_path is the mount prefix (plus Airflow's own base path), so links work mounted or
        # not.
        return request.scope.get("root_path", "").rstrip("/")

    def _airflow_ui(request: Request) -> str:
        # The page is mounted at <airflow base>/ragwatch: the Airflow UI's run pages sit beside it.
        return base_path(request).removesuffix("/ragwatch")

    def report_url_for(request: Request) -> Callable[[str], str]:
        base = base_path(request)
        return lambda run_id: f"{base}/reports/{quote(run_id, safe='')}"

    # Plain `def` routes: the results DB is read with blocking drivers, so FastAPI runs them in its
    # thread pool instead of stalling the api-server's event loop.
    @app.get("/", response_class=HTMLResponse, dependencies=[Depends(authorized_person)])
    def page(request: Request) -> HTMLResponse:
        doc = overview(reader, reader.settings(), report_url_for(request), active_runs)
        html = _PAGE.render(
            doc=doc,
            suites=list(doc["suites"]),
            fmt=number,
            ci=interval,
            quote=quote,
            api_url=f"{base_path(request)}/api/latest",
            airflow_ui=_airflow_ui(request),
        )
        return HTMLResponse(html, headers=PAGE_SECURITY_HEADERS)

    @app.get("/api/latest", dependencies=[Depends(authorized)])
    def latest(request: Request) -> dict[str, Any]:
        return overview(reader, reader.settings(), report_url_for(request), active_runs)

    @app.get("/reports/{run_id:path}", dependencies=[Depends(authorized)])
    def report(run_id: str) -> FileResponse:
        settings = reader.settings()
        run = reader.run(settings, run_id)
        if run is None:
            raise HTTPException(404, f"no eval run {run_id!r} in the results DB")
        if not run.report_path:
            raise HTTPException(404, f"eval run {run_id!r} has no report")
        try:
            path = resolve_report(settings, run.report_path)
        except OutsideReportsDir:
            raise HTTPException(
                403, f"the report of run {run_id!r} is outside the reports directory; not served"
            )
        if not path.is_file():
            # No path in the answer: readers of the page need not learn the server's file layout.
            raise HTTPException(
                404, f"the report of run {run_id!r} is missing from the reports directory"
            )
        return FileResponse(
            path, media_type="text/html; charset=utf-8", headers=REPORT_SECURITY_HEADERS
        )

    return app


async def require_airflow_reader(request: Request) -> None:
    """Inside the api-server: an Airflow user allowed to read DAG runs, from a bearer token or the
    UI's session cookie, exactly as Airflow's own API authenticates.

    Eval runs are results of DAG runs, so they get the same permission; a team on the FAB auth
    manager grants it with the usual "DAG Runs: can read".
    """
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
    from airflow.api_fastapi.core_api.security import bearer_scheme, get_user

    user = await get_user(
        request=request, _oauth_token=None, bearer_credentials=await bearer_scheme(request)
    )
    if not get_auth_manager().is_authorized_dag(
        method="GET", access_entity=DagAccessEntity.RUN, user=user
    ):
        raise HTTPException(403, "reading ragwatch results needs read access to DAG runs")


def airflow_active_runs(dag_ids: tuple[str, ...]) -> list[ActiveRun]:
    """Inside the api-server: the queued and running runs of `dag_ids`, oldest first, with their
    task instances counted per state, read from Airflow's metadata DB (the api-server's own
    session)."""
    from airflow.models.dagrun import DagRun
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import and_, func, select

    with create_session() as session:
        runs = session.execute(
            select(
                DagRun.dag_id,
                DagRun.run_id,
                DagRun.logical_date,
                DagRun.state,
                DagRun.start_date,
                DagRun.data_interval_start,
                DagRun.data_interval_end,
                DagRun.run_after,
            )
            .where(DagRun.dag_id.in_(dag_ids), DagRun.state.in_(("queued", "running")))
            .order_by(DagRun.logical_date, DagRun.dag_id)
        ).all()
        if not runs:
            return []
        keys = [(r.dag_id, r.run_id) for r in runs]
        counted = session.execute(
            select(
                TaskInstance.dag_id,
                TaskInstance.run_id,
                TaskInstance.task_id,
                TaskInstance.state,
                func.count(),
            )
            .where(
                and_(
                    TaskInstance.dag_id.in_(dag_ids),
                    TaskInstance.run_id.in_([r.run_id for r in runs]),
                )
            )
            .group_by(
                TaskInstance.dag_id, TaskInstance.run_id, TaskInstance.task_id, TaskInstance.state
            )
        ).all()
    states: dict[tuple[str, str], Counter] = {key: Counter() for key in keys}
    running: dict[tuple[str, str], list[str]] = {key: [] for key in keys}
    for dag_id, run_id, task_id, state, count in counted:
        if (dag_id, run_id) not in states:
            continue
        states[dag_id, run_id][str(state or "none")] += count
        if state == "running":
            running[dag_id, run_id].append(task_id if count == 1 else f"{task_id} ×{count}")
    return [
        ActiveRun(
            dag_id=r.dag_id,
            run_id=r.run_id,
            logical_date=_iso(r.logical_date),
            state=str(r.state),
            started_at=_iso(r.start_date),
            covers=_covered_days(r.dag_id, r.data_interval_start, r.data_interval_end, r.run_after),
            task_states=dict(sorted(states[r.dag_id, r.run_id].items())),
            running_tasks=sorted(running[r.dag_id, r.run_id]),
        )
        for r in runs
    ]


def airflow_login_url(next_url: str) -> str:
    from airflow.api_fastapi.app import get_auth_manager

    return get_auth_manager().get_url_login(next_url=next_url)


_ENV = Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True)
_PAGE = _ENV.from_string("""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ragwatch · latest evals</title>
<style>
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1f2933; margin: 0 auto;
       max-width: 1180px; padding: 20px; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 24px 0 8px; border-bottom: 1px solid #e4e7eb; }
h3 { font-size: 15px; margin: 16px 0 4px; }
table { border-collapse: collapse; margin: 6px 0 12px; } th, td { padding: 3px 8px; border-bottom: 1px solid #e4e7eb;
       text-align: left; vertical-align: top; }
th { background: #f5f7fa; font-weight: 600; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.muted { color: #7b8794; } .pass { color: #137a3b; font-weight: 600; } .fail { color: #b42318; font-weight: 600; }
.banner { background: #fff4d6; border: 1px solid #f0c36d; padding: 4px 10px; margin: 6px 0; }
.empty { background: #f5f7fa; border: 1px solid #e4e7eb; padding: 8px 12px; }
</style>
</head>
<body>
<h1>ragwatch: latest eval runs</h1>
<p class="muted">Means are over ok scores only; failed and skipped scores are counted, never averaged as 0.
Each interval is named with its level and method as computed for that metric. JSON: <a href="{{ api_url }}">{{ api_url
}}</a></p>
{% for suite in suites %}
{% set section = doc.suites[suite] %}
<h2>{{ suite }} suite</h2>
{% if section.in_progress %}
<table class="progress">
<tr><th>in progress</th><th>evaluates</th><th>state</th><th>tasks</th><th>running now</th></tr>
{% for active in section.in_progress %}
<tr><td><a href="{{ airflow_ui }}/dags/{{ quote(active.dag_id, safe='') }}/runs/{{ quote(active.run_id, safe='')
}}" target="_top">{{ active.dag_id }}</a></td><td>{{ active.covers or "–" }}</td><td>{{ active.state
}}</td><td>{% for state, count in active.task_states.items() %}{{ count }} {{ state }}{% if not loop.last %}, {%
endif %}{% endfor %}</td><td>{{ active.running_tasks | join(", ") or "–" }}</td></tr>
{% endfor %}
</table>
{% endif %}
{% for run in section.runs %}
<h3>target {{ run.target }}</h3>
<table class="meta">
<tr><th>date</th><td>{{ run.logical_date }}</td><th>dataset version</th><td>{{ run.dataset_version }}</td></tr>
<tr><th>status</th><td>{% if run.status == "success" %}{{ run.status }}{% else %}<span class="fail">{{ run.status
}}</span>{% endif %}</td>
<th>gate</th><td>{% if run.gate == "passed" %}<span class="pass">passed</span>{% elif run.gate == "failed" %}<span
class="fail">failed</span>{% else %}<span class="muted">no gate</span>{% endif %}{% if run.gate_summary %}
<span class="muted">({{ run.gate_summary }})</span>{% endif %}</td></tr>
<tr><th>run</th><td>{{ run.run_id }}</td><th>report</th><td>{% if run.report_url %}<a href="{{ run.report_url }}">HTML
report</a>{% else %}<span class="muted">none</span>{% endif %}</td></tr>
<tr><th>judge</th><td>{{ run.judge_model or "–" }}</td><th>generator</th><td>{{ run.generator_model or "–" }}</td></tr>
</table>
{% if run.offline_backend %}
<div class="banner">Scored with the offline deterministic backend: these numbers test the pipeline, not the
assistant.</div>
{% endif %}
{% if run.metrics %}
<table>
<tr><th>metric</th><th>mean</th><th>interval</th><th>level, method</th><th>n</th><th>failed</th><th>skipped</th></tr>
{% for m in run.metrics %}
<tr><td>{{ m.metric }}{% if not m.higher_is_better %} <span class="muted">(lower is better)</span>{% endif %}</td>
<td class="num">{{ fmt(m.mean) }}</td><td class="num">{{ ci(m.ci_low, m.ci_high) }}</td><td class="muted">{% if
m.ci_method %}{{ (m.confidence * 100) | round | int }} %, {{ m.ci_method }}{% else %}–{% endif %}</td><td class="num">{{ m.n
}}</td>
<td class="num">{% if m.n_failed %}<span class="fail">{{ m.n_failed }}</span>{% else %}0{% endif %}</td>
<td class="num">{{ m.n_skipped }}</td></tr>
{% endfor %}
</table>
{% set metric_names = run.metrics | map(attribute="metric") | list %}
{% set strata = run.strata | map(attribute="stratum") | unique | sort %}
{% if strata %}
<details><summary>per stratum ({{ strata | length }})</summary>
<table>
<tr><th>stratum</th>{% for name in metric_names %}<th>{{ name }}</th>{% endfor %}</tr>
{% for stratum in strata %}
<tr><td>{{ stratum }}</td>
{% for name in metric_names %}
{% set cell = run.strata | selectattr("stratum", "equalto", stratum) | selectattr("metric", "equalto", name) | first %}
<td class="num">{% if cell %}{{ fmt(cell.mean) }} <span class="muted">n={{ cell.n }}{% if cell.n_failed %} ✗{{
cell.n_failed }}{% endif %}</span>{% else %}<span class="muted">–</span>{% endif %}</td>
{% endfor %}
</tr>
{% endfor %}
</table>
</details>
{% endif %}
{% else %}
<p class="muted">This run saved no scores.</p>
{% endif %}
{% else %}
<p class="empty">No {{ suite }} run yet. {% if section.in_progress %}Its first scores appear here when the runs in
progress above finish.{% else %}{{ section.next_step }}{% endif %}</p>
{% endfor %}
{% endfor %}
</body>
</html>
""")

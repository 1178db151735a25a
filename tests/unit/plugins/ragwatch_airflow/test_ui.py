"""The ragwatch page in Airflow: latest scores per suite and target, escaped, reports served safely.

The FastAPI app is called in-process here; tests/integration/test_stack.py calls the same app
through a real Airflow api-server at /ragwatch/.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import date, timedelta
from urllib.parse import quote, unquote

import pytest
from fastapi import HTTPException, Request
from fastapi.testclient import TestClient

from pipelines.core.records import Score
from pipelines.core.settings import Settings
from pipelines.core.workspace import Workspace
from pipelines.evaluation.outputs.report import render_report, write_report
from pipelines.models.offline import OFFLINE_MODEL
from pipelines.stores.results import EvalRun, ResultsStore, run_id
from tests.conftest import ROOT
from tests.support.stack import plugin_routes

sys.path.insert(
    0, str(ROOT / "plugins")
)  # where Airflow puts it: the plugin imports `ragwatch_airflow`
from ragwatch_airflow.ui import ActiveRun, create_app  # noqa: E402

DAY = date(2026, 3, 2)
HOSTILE = '<script>alert("x")</script>'
NEWER_ID = "offline/2026-03-02/prod"
NEWER_URL = "/reports/offline%2F2026-03-02%2Fprod"  # a run id holds '/': one path segment, quoted


def report_url(run: EvalRun) -> str:
    return "/reports/" + quote(run.run_id, safe="")


def make_scores(run: EvalRun, faithfulness: float) -> list[Score]:
    """Ten items in two strata (one with a hostile name); faithfulness averages exactly
    `faithfulness`."""

    def score(
        item: str,
        stratum: str,
        metric: str,
        value: float | None,
        status: str = "ok",
        error: str | None = None,
    ):
        return Score(
            run_id=run.run_id,
            suite=run.suite,
            item_id=item,
            stratum=stratum,
            metric=metric,
            value=value,
            status=status,
            error=error,
            judge_model=run.judge_model,
            dataset_version=run.dataset_version,
        )

    out = []
    for i in range(10):
        stratum = "single_hop/es" if i % 2 else f"multi_hop/{HOSTILE}"
        out.append(
            score(f"q{i}", stratum, "faithfulness", round(faithfulness + 0.01 * (i % 5 - 2), 6))
        )
        out.append(score(f"q{i}", stratum, "recall@5", float(i % 4 != 0)))
    out.append(
        score("q0", f"multi_hop/{HOSTILE}", "context_recall", None, "failed", "judge timeout")
    )
    out.append(score("q1", "single_hop/es", "context_recall", 0.5))
    out.append(score("q2", f"multi_hop/{HOSTILE}", "context_recall", 0.7))
    return out


def seed_two_runs(store: ResultsStore, settings: Settings) -> tuple[EvalRun, EvalRun]:
    """Two offline runs of target `prod` on consecutive days, each with its HTML report written."""
    store.create()
    older = EvalRun(
        run_id=run_id("offline", DAY - timedelta(days=1), "prod"),
        suite="offline",
        logical_date=DAY - timedelta(days=1),
        target="prod",
        dataset_version="golden/demo/v1",
        judge_model=OFFLINE_MODEL,
        generator_model=OFFLINE_MODEL,
    )
    newer = EvalRun(
        run_id=NEWER_ID,
        suite="offline",
        logical_date=DAY,
        target="prod",
        dataset_version=f"golden/demo/v2 {HOSTILE}",
        judge_model=OFFLINE_MODEL,
        generator_model=OFFLINE_MODEL,
        gate_passed=False,
        gate={"summary": f"gate failed: faithfulness: dropped {HOSTILE}"},
    )
    for run, faithfulness in ((older, 0.9), (newer, 0.7)):
        scores = make_scores(run, faithfulness)
        report = Workspace.from_settings(settings).report(run.suite, run.logical_date, run.target)
        run.report_path = str(write_report(report, render_report(run, scores)))
        store.save_run(run, scores)
    return older, newer


@pytest.fixture
def seeded(settings):
    store = ResultsStore.from_settings(settings)
    older, newer = seed_two_runs(store, settings)
    yield store, older, newer
    store.dispose()


@pytest.fixture
def client(settings):
    return TestClient(create_app(lambda: settings))


def add_run(store: ResultsStore, target: str, report: str | None) -> EvalRun:
    run = EvalRun(
        run_id=run_id("online", DAY, target),
        suite="online",
        logical_date=DAY,
        target=target,
        dataset_version="traces/dt=2026-03-02",
        report_path=report,
    )
    store.save_run(run, [])
    return run


def test_no_run_yet_says_what_to_run_and_creates_nothing(client, settings):
    page = client.get("/")
    assert page.status_code == 200
    assert "No offline run yet" in page.text and "offline_eval" in page.text
    assert "No online run yet" in page.text and "online_eval" in page.text
    latest = client.get("/api/latest").json()
    assert (
        latest["suites"]["offline"]["runs"] == []
        and "offline_eval" in latest["suites"]["offline"]["next_step"]
    )
    assert latest["suites"]["online"]["runs"] == []
    assert not (settings.home / "results.db").exists()  # a read-only page must not create the DB


def test_inside_airflow_the_empty_page_shows_the_runs_in_progress(settings):
    """The first hour of a new stack: the first scheduled runs are still going, so the page lists
    them (linked to Airflow's run page) instead of advice to run a DAG elsewhere."""
    backfill = ActiveRun(
        dag_id="offline_eval",
        run_id="backfill__2026-03-01T00:00:00+00:00",
        logical_date="2026-03-01T00:00:00+00:00",
        state="running",
        started_at=None,
        covers="2026-03-01 – 2026-03-07",
        task_states={"none": 3, "running": 2, "success": 2},
        running_tasks=["judge ×2"],
    )
    asked = []

    def active_runs(dag_ids):
        asked.append(dag_ids)
        return [backfill] if "offline_eval" in dag_ids else []

    client = TestClient(create_app(lambda: settings, active_runs=active_runs))
    page = client.get("/").text
    assert asked == [("golden_build", "offline_eval"), ("trace_sampling", "online_eval")]
    assert "No offline run yet. Its first scores appear here when the runs in" in page
    assert 'href="/dags/offline_eval/runs/backfill__2026-03-01T00%3A00%3A00%2B00%3A00"' in page
    assert (
        "3 none, 2 running, 2 success" in page
        and "judge ×2" in page
        and "2026-03-01 – 2026-03-07" in page
    )
    # Where nothing runs, the advice names the Airflow UI, not the embedded `scripts/airflow.sh`.
    assert "Trigger `trace_sampling`" in page and "scripts/airflow.sh" not in page
    latest = client.get("/api/latest").json()["suites"]
    assert latest["offline"]["in_progress"][0]["running_tasks"] == ["judge ×2"]
    assert latest["offline"]["next_step"] is None and latest["online"]["in_progress"] == []


def test_latest_run_per_suite_and_target_with_ci_and_counts(client, seeded):
    _, _, newer = seeded
    latest = client.get("/api/latest").json()
    [run] = latest["suites"]["offline"]["runs"]
    assert (
        run["run_id"] == NEWER_ID
        and run["logical_date"] == DAY.isoformat()
        and run["target"] == "prod"
    )
    assert run["dataset_version"] == newer.dataset_version
    assert (
        run["gate"] == "failed"
        and "dropped" in run["gate_summary"]
        and run["offline_backend"] is True
    )
    metrics = {m["metric"]: m for m in run["metrics"]}
    assert set(metrics) == {"faithfulness", "recall@5", "context_recall"}
    faith = metrics["faithfulness"]
    assert faith["stratum"] == "all" and faith["n"] == 10 and faith["n_failed"] == 0
    assert faith["mean"] == pytest.approx(0.7)
    assert faith["ci_low"] < faith["mean"] < faith["ci_high"]
    recall = metrics["context_recall"]
    assert (recall["n"], recall["n_failed"], recall["mean"]) == (
        2,
        1,
        pytest.approx(0.6),
    )  # failed is not a 0
    strata = {(s["stratum"], s["metric"]): s for s in run["strata"]}
    assert strata[("single_hop/es", "faithfulness")]["n"] == 5
    assert strata[(f"multi_hop/{HOSTILE}", "context_recall")]["n_failed"] == 1
    assert run["report_url"] == NEWER_URL

    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in page.headers["content-security-policy"]
    text = page.text
    assert DAY.isoformat() in text and "golden/demo/v2" in text and ">failed<" in text
    assert (
        "0.700" in text and "[0.587, 0.770]" in text
    )  # mean and its interval (jeffreys-bounded-mean)
    # Each interval names its own level and method, from the field that made it; no page-wide claim.
    assert faith["ci_method"] == "jeffreys-bounded-mean" and "95 %, jeffreys-bounded-mean" in text
    assert "bootstrap" not in text
    assert f'href="{NEWER_URL}"' in text
    assert "offline deterministic backend" in text
    assert "No online run yet" in text
    assert (DAY - timedelta(days=1)).isoformat() not in text  # only the latest run of the target


def test_every_text_is_escaped(client, seeded):
    text = client.get("/").text
    assert "<script>" not in text
    assert (
        "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in text
    )  # dataset version, gate summary, stratum
    assert text.count("&lt;script&gt;") >= 3


def test_report_is_served_sandboxed(client, seeded):
    response = client.get(
        client.get("/api/latest").json()["suites"]["offline"]["runs"][0]["report_url"]
    )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert "sandbox" in response.headers["content-security-policy"]
    assert "ragwatch eval: offline · 2026-03-02 · prod" in response.text


def test_unknown_runs_and_missing_reports_are_404(client, seeded):
    store, _, _ = seeded
    assert client.get("/reports/no-such-run").status_code == 404
    assert client.get(report_url(add_run(store, "no-report", None))).status_code == 404
    response = client.get(
        report_url(add_run(store, "gone", "golden/reports/online/2026-03-02_gone.html"))
    )
    assert response.status_code == 404 and "missing" in response.json()["detail"]


def test_report_paths_outside_the_reports_dir_are_refused(client, seeded, settings, tmp_path):
    store, _, _ = seeded
    secret = tmp_path / "secret.html"
    secret.write_text("<p>not a report</p>")
    reports = Workspace.from_settings(settings).reports_dir
    (reports / "online").mkdir(parents=True, exist_ok=True)
    (reports / "online" / "link.html").symlink_to(secret)
    evil = {
        "relative": "golden/reports/../../../../secret.html",
        "absolute": str(secret),
        "symlink": str(reports / "online" / "link.html"),
        "sibling": str(
            reports.parent / "reports-other" / "x.html"
        ),  # shares the prefix, not the directory
    }
    (reports.parent / "reports-other").mkdir()
    (reports.parent / "reports-other" / "x.html").write_text("x")
    for target, stored in evil.items():
        response = client.get(report_url(add_run(store, target, stored)))
        assert response.status_code == 403, (target, response.text)
        assert "not a report" not in response.text
    online = {r["target"]: r for r in client.get("/api/latest").json()["suites"]["online"]["runs"]}
    assert all(online[t]["report_url"] is None for t in evil)  # never linked either
    # Traversal in the URL is only ever a run id to look up, never a path to open.
    assert client.get("/reports/..%2F..%2F..%2Fetc%2Fpasswd").status_code == 404
    assert client.get("/reports/../../etc/passwd").status_code == 404


def test_authorization_hook_guards_every_route_and_sends_people_to_login(settings, seeded):
    async def deny(request: Request) -> None:
        raise HTTPException(401, "Not authenticated")

    async def allow(request: Request) -> None:
        allowed.append(request.url.path)

    allowed: list[str] = []
    denied = TestClient(
        create_app(lambda: settings, authorize=deny, login_url=lambda nxt: f"/login?next={nxt}"),
        follow_redirects=False,
    )
    let_in = TestClient(create_app(lambda: settings, authorize=allow), follow_redirects=False)
    routes = plugin_routes({"run_id": NEWER_ID})
    assert ("GET", NEWER_URL) in routes
    for method, path in routes:
        assert denied.request(method, path).status_code == 401, path
        browser = denied.request(method, path, headers={"accept": "text/html"})
        if (
            path == "/"
        ):  # the page: a person without a session goes to the login page, then comes back
            assert (
                browser.status_code == 307
                and browser.headers["location"] == "/login?next=http://testserver/"
            )
        else:
            assert browser.status_code == 401, path
        assert let_in.request(method, path).status_code == 200, path
    assert allowed == [
        unquote(path) for _, path in routes
    ]  # the hook ran once per request, before each route


@pytest.mark.airflow
def test_airflow_loads_the_plugin_with_valid_views():
    """Airflow's own loader and response models accept the plugin (the api-server uses both)."""
    code = (
        "import json\n"
        "from airflow._shared.plugins_manager import _load_plugins_from_plugin_directory\n"
        "from airflow.api_fastapi.core_api.datamodels.plugins import ExternalViewResponse, FastAPIAppResponse\n"
        "plugins, errors = _load_plugins_from_plugin_directory(plugins_folder=PLUGINS)\n"
        "[p] = [p for p in plugins if p.name == 'ragwatch']\n"
        "views = [ExternalViewResponse.model_validate(v).model_dump() for v in p.external_views]\n"
        "apps = [FastAPIAppResponse.model_validate({**a, 'app': str(a['app'])}).url_prefix for a in p.fastapi_apps]\n"
        "print(json.dumps({'errors': errors, 'views': views, 'apps': apps}))\n"
    ).replace("PLUGINS", repr(str(ROOT / "plugins")))
    env = dict(os.environ, PYTHONPATH=str(ROOT / "plugins"))
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env
    )
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded["errors"] == {}
    assert loaded["apps"] == ["/ragwatch"]
    [view] = loaded["views"]
    assert (view["href"], view["destination"], view["url_route"]) == (
        "/ragwatch/",
        "nav",
        "ragwatch",
    )


def test_a_run_in_progress_shows_the_days_it_evaluates_not_its_own_date():
    from datetime import datetime, timezone

    from ragwatch_airflow.ui import _covered_days

    def at(day: int) -> datetime:
        return datetime(2026, 12, day, tzinfo=timezone.utc)

    assert (
        _covered_days("online_eval", at(6), at(7), at(7)) == "2026-12-06"
    )  # the daily eval run on the 7th
    assert _covered_days("offline_eval", at(1), at(8), at(8)) == "2026-12-01 – 2026-12-07"

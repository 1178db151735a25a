"""End to end: a real Airflow 3 (api-server, scheduler, dag-processor) backfills three past days.

The production shape, shrunk to a test: metadata on the real PostgreSQL, LocalExecutor, the
DAGs and plugins of this checkout, the simple auth manager in all-admins mode. Everything goes
through the public REST API a team would use (`POST /api/v2/backfills`), and the ragwatch page
is read through the api-server that mounts it. `online_eval` is backfilled too when its DAG
file exists; without it the test covers `trace_sampling` alone.

`online_eval`'s sensor pokes every five minutes, so its backfill is created once
`trace_sampling`'s partitions are published: each sensor then succeeds at its first poke and the
test stays within a few minutes on two cores. Its sensor runs in reschedule mode and nothing here
defers, so no triggerer is started (a deferred task fails the test at once, saying so).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from pipelines.settings import Settings
from pipelines.stores.results import ResultsStore
from tests.conftest import ROOT
from tests.services import free_port
from tests.test_ui_plugin import DAY, HOSTILE, seed_two_runs

pytestmark = [pytest.mark.airflow, pytest.mark.services]

BUDGET_S = 480
"""Everything from `db migrate` to the last terminal run; the failure names what it waited for."""
BACKFILL_DAYS = 3
SAMPLE_RATE = 0.1
TERMINAL = {"success", "failed"}
ONLINE_EVAL = ROOT / "dags" / "online_eval.py"
FAILED_TASK_STATES = {"failed", "up_for_retry", "upstream_failed"}
SETUP_COMMANDS = ("seed", "corpus-index")
"""Commands that run to completion beside the Airflow services (the others must stay up)."""


@dataclass
class Stack:
    home: Path
    env: dict[str, str]
    base_url: str
    results_url: str
    deadline: float
    dag_ids: list[str]
    """Fixed when the test starts: a DAG file that appears meanwhile is not part of this run."""
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    token: str | None = None

    @property
    def logs(self) -> Path:
        return self.home / "logs"

    def start(self, name: str, *args: str) -> None:
        log = open(self.logs / f"{name}.log", "wb")
        # A session of its own: Airflow's children (executor workers, parsing processes, task
        # supervisors) are stopped with their parent as one process group.
        self.processes[name] = subprocess.Popen([*args], cwd=ROOT, env=self.env, stdout=log,
                                                stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
        log.close()

    def stop(self) -> None:
        for proc in self.processes.values():
            if proc.poll() is None:
                _signal_group(proc, signal.SIGTERM)
        for proc in self.processes.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass
            _signal_group(proc, signal.SIGKILL)  # whatever of the group outlived its leader
            if proc.poll() is None:
                proc.wait(timeout=10)

    def tail(self, name: str, chars: int = 4000) -> str:
        path = self.logs / f"{name}.log"
        text = path.read_text(errors="replace") if path.exists() else "(no log)"
        return f"--- {name} log ({path}), last {chars} chars ---\n{text[-chars:]}"

    def check_alive(self) -> None:
        for name, proc in self.processes.items():
            if name not in SETUP_COMMANDS and proc.poll() is not None:
                pytest.fail(f"airflow {name} exited with {proc.returncode}\n{self.tail(name)}")

    def remaining(self, what: str) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            pytest.fail(f"the {BUDGET_S} s budget ran out while waiting for {what}\n{self.diagnostics()}")
        return left

    def client(self) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=30)

    def api(self, method: str, path: str, **kwargs) -> httpx.Response:
        with self.client() as client:
            return client.request(method, path, **kwargs)

    def diagnostics(self) -> str:
        parts = []
        if self.token:
            for dag_id in self.dag_ids:
                try:
                    runs = self.api("GET", f"/api/v2/dags/{dag_id}/dagRuns", params={"limit": 100}).json()
                    tis = self.api("GET", f"/api/v2/dags/{dag_id}/dagRuns/~/taskInstances",
                                   params={"limit": 500}).json()  # fmt: skip
                except (httpx.HTTPError, ValueError) as exc:
                    parts.append(f"{dag_id}: API unreachable ({exc})")
                    continue
                parts.append(f"{dag_id} runs: " + json.dumps(
                    [(r["dag_run_id"], r["run_type"], r["state"]) for r in runs.get("dag_runs", [])]))  # fmt: skip
                parts.append(f"{dag_id} task instances: " + json.dumps(
                    [(t["dag_run_id"], t["task_id"], t["state"], t["try_number"])
                     for t in tis.get("task_instances", [])]))  # fmt: skip
        parts += self.failed_task_logs()
        parts += [self.tail("scheduler", 6000), self.tail("dag-processor", 2000), self.tail("api-server", 2000)]
        return "\n".join(parts)

    def failed_task_logs(self) -> list[str]:
        """The error events of the latest task attempts that logged one (task logs are JSON lines)."""
        found = []
        for log in (self.home / "airflow" / "logs").glob("dag_id=*/run_id=*/task_id=*/**/attempt=*.log"):
            errors = []
            for line in log.read_text(errors="replace").splitlines():
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if event.get("level") in ("error", "critical"):
                    details = [f"{d.get('exc_type')}: {d.get('exc_value')}" for d in event.get("error_detail") or []]
                    errors.append(" | ".join([str(event.get("event")), *details])[:3000])
            if errors:
                header = f"--- task log {log.relative_to(self.home)} ---"
                found.append((log.stat().st_mtime, "\n".join([header, *errors])))
        return [text for _, text in sorted(found)[-4:]]


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)  # the group this test created for exactly this process
    except ProcessLookupError:
        pass


def stack_env(home: Path, port: int, metadata_url: str, results_url: str, pushgateway_url: str) -> dict[str, str]:
    # The test process's own Airflow and ragwatch settings (conftest) must not leak in.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "RAGWATCH_"))}
    base_url = f"http://127.0.0.1:{port}"
    env.update({
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",  # airflow, dvc
        "RAGWATCH_HOME": str(home),
        # Set, not generated: parallel first tasks would each race to create the key file.
        "RAGWATCH_ANONYMIZER_KEY": "e2e-key-not-secret",
        "RAGWATCH_RESULTS_URL": results_url,
        "RAGWATCH_PUSHGATEWAY_URL": pushgateway_url,
        "AIRFLOW_HOME": str(home / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(ROOT / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__PARALLELISM": "2",  # two cores: two task processes at a time
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",  # the backfill is created before unpausing
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{base_url}/execution/",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": metadata_url,
        "AIRFLOW__API__BASE_URL": base_url,
        "AIRFLOW__API__WORKERS": "1",
        # Every component signs or checks task and API tokens: one shared secret, not one each.
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
        "AIRFLOW__API__SECRET_KEY": secrets.token_hex(32),
        # Parse once at start, not every 30 s: the cores belong to the tasks.
        "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "600",
        "AIRFLOW__LOGGING__COLORED_CONSOLE_LOG": "False",
        "GX_ANALYTICS_ENABLED": "false", "DVC_NO_ANALYTICS": "1", "RAGAS_DO_NOT_TRACK": "true",
    })  # fmt: skip
    return env


def create_database(postgres, prefix: str) -> tuple[str, str, str]:
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    postgres.psql(f"CREATE ROLE {name} LOGIN PASSWORD '{name}-pw';")
    postgres.psql(f"CREATE DATABASE {name} OWNER {name};")
    return name, f"{name}-pw", name


@pytest.fixture
def stack(postgres, pushgateway, tmp_path):
    home = tmp_path / "home"
    (home / "logs").mkdir(parents=True)
    (home / "airflow").mkdir()
    user, password, db = create_database(postgres, "airflow")
    metadata_url = f"postgresql+psycopg2://{user}:{password}@127.0.0.1:{postgres.port}/{db}"
    results_url = postgres.url(*create_database(postgres, "results"))
    port = free_port()
    stack = Stack(home=home, env=stack_env(home, port, metadata_url, results_url, pushgateway.url),
                  base_url=f"http://127.0.0.1:{port}", results_url=results_url, deadline=time.monotonic() + BUDGET_S,
                  dag_ids=["trace_sampling", *(["online_eval"] if ONLINE_EVAL.exists() else [])])  # fmt: skip
    try:
        yield stack
    finally:
        stack.stop()


def wait_for(stack: Stack, what: str, probe, interval: float = 2.0):
    """Call `probe` until it returns something truthy, within the stack's budget."""
    while True:
        stack.check_alive()
        result = probe()
        if result:
            return result
        time.sleep(min(interval, stack.remaining(what)))


def get_token(stack: Stack):
    try:
        response = httpx.get(f"{stack.base_url}/auth/token", timeout=5)
    except httpx.HTTPError:
        return None
    # All-admins mode: GET /auth/token issues an admin token without credentials (201).
    return response.json()["access_token"] if response.status_code == 201 else None


def test_backfill_three_days_end_to_end(stack, pushgateway):
    started = time.monotonic()
    airflow = str(Path(sys.executable).parent / "airflow")
    migrate = subprocess.run([airflow, "db", "migrate"], cwd=ROOT, env=stack.env, capture_output=True, text=True,
                             timeout=stack.remaining("airflow db migrate"))  # fmt: skip
    assert migrate.returncode == 0, migrate.stdout[-3000:] + migrate.stderr[-3000:]
    migrated = time.monotonic()

    stack.start("api-server", airflow, "api-server", "--host", "127.0.0.1", "--port", stack.base_url.rsplit(":", 1)[1])
    # No log-serving sidecar (it binds 0.0.0.0:8793): the api-server reads task logs from the
    # AIRFLOW_HOME it shares with the scheduler.
    stack.start("scheduler", airflow, "scheduler", "--skip-serve-logs")
    stack.start("dag-processor", airflow, "dag-processor")
    stack.start("seed", sys.executable, "-m", "pipelines.cli", "demo", "seed", "--days", "6", "--per-day", "120")
    if "online_eval" in stack.dag_ids:  # online noise sensitivity injects chunks drawn from the corpus index
        stack.start("corpus-index", sys.executable, "-m", "pipelines.cli", "corpus", "index",
                    str(ROOT / "tests" / "data" / "corpus"))  # fmt: skip

    stack.token = wait_for(stack, "the api-server to issue a token", lambda: get_token(stack))
    for pool, slots, about in (("ragwatch_dvc", 1, "DVC holds a repository lock"), ("ragwatch_llm", 4, "model calls")):
        response = stack.api("POST", "/api/v2/pools", json={"name": pool, "slots": slots, "description": about})
        assert response.status_code == 201, response.text

    def parsed():
        errors = stack.api("GET", "/api/v2/importErrors").json()
        if errors["total_entries"]:
            pytest.fail("DAG import errors:\n" + "\n".join(e["stack_trace"][-2000:] for e in errors["import_errors"]))
        return all(stack.api("GET", f"/api/v2/dags/{dag_id}").status_code == 200 for dag_id in stack.dag_ids)

    wait_for(stack, f"the dag-processor to parse {stack.dag_ids}", parsed)
    for name in SETUP_COMMANDS:
        if name in stack.processes:
            stack.processes[name].wait(timeout=stack.remaining(f"the {name} command"))
            assert stack.processes[name].returncode == 0, stack.tail(name)
    ready = time.monotonic()

    today = datetime.now(timezone.utc).date()
    days = [today - timedelta(days=n) for n in range(BACKFILL_DAYS, 0, -1)]
    timing = [f"migrate {migrated - started:.0f} s", f"start+parse+seed {ready - migrated:.0f} s"]
    for dag_id in stack.dag_ids:
        begun = time.monotonic()
        if dag_id == "trace_sampling":  # days in parallel: they meet in the one-slot DVC pool
            backfill(stack, dag_id, days, conf={"sample_rate": SAMPLE_RATE}, max_active_runs=len(days))
        else:
            # One day at a time: this stack has Qdrant in local mode, which one process may open at
            # a time (production runs a Qdrant server, where the days can overlap).
            backfill(stack, dag_id, days, conf=None, max_active_runs=1)
        runs = wait_for(stack, f"every {dag_id} backfill run to finish", lambda: terminal_runs(stack, dag_id), 5)
        timing.append(f"{dag_id} backfill {time.monotonic() - begun:.0f} s")
        by_day = sorted((datetime.fromisoformat(r["logical_date"]).date(), r["state"]) for r in runs)
        assert by_day == [(d, "success") for d in days], f"{dag_id}: {by_day}\n{stack.diagnostics()}"
        every_run = stack.api("GET", f"/api/v2/dags/{dag_id}/dagRuns", params={"limit": 100}).json()["dag_runs"]
        others = [(r["dag_run_id"], r["run_type"]) for r in every_run if r["run_type"] != "backfill"]
        assert others == [], f"{dag_id}: runs besides the backfill: {others}"

    workspace = stack.home / "workspace"
    for day in days:
        partition = workspace / "golden" / "traces" / f"dt={day}"
        manifest = json.loads((partition / "_manifest.json").read_text())
        assert manifest["day"] == day.isoformat() and manifest["sample_rate"] == SAMPLE_RATE  # dag_run_conf applied
        assert manifest["sampled"] + manifest["quarantined"] == manifest["selected"] > 0
        assert (partition.parent / f"dt={day}.dvc").exists()

    results = ResultsStore(stack.results_url)
    try:
        if "online_eval" in stack.dag_ids:
            check_online_scores(results, days)
            metrics = httpx.get(f"{pushgateway.url}/metrics", timeout=10).text
            assert 'suite="online"' in metrics, metrics[-2000:]
        check_ui_through_api_server(stack, results, days)
    finally:
        results.dispose()

    timing.append(f"total {time.monotonic() - started:.0f} s")
    print(f"\nbackfill e2e ({', '.join(stack.dag_ids)}): {', '.join(timing)}")


def backfill(stack: Stack, dag_id: str, days: list, *, conf: dict | None, max_active_runs: int) -> None:
    """`POST /api/v2/backfills` while the DAG is still paused, then unpause it.

    Dates are logical dates: with CronDataIntervalTimetable a run's logical date is the start of
    the day it processes. Yesterday is included on purpose: created before the unpause, its run
    stands in for the scheduled one (the scheduler skips a logical date that already has a run),
    so no extra run competes for the cores and each day has exactly one run.
    """
    body = {"dag_id": dag_id, "from_date": f"{days[0]}T00:00:00Z", "to_date": f"{days[-1]}T00:00:00Z",
            "reprocess_behavior": "none", "max_active_runs": max_active_runs, "dag_run_conf": conf}  # fmt: skip
    response = stack.api("POST", "/api/v2/backfills", json=body)
    assert response.status_code == 200, response.text
    created = response.json()
    assert created["dag_id"] == dag_id and created["completed_at"] is None and created["is_paused"] is False
    assert len(backfill_runs(stack, dag_id)) == len(days)  # the runs exist as soon as the backfill does
    response = stack.api("PATCH", f"/api/v2/dags/{dag_id}", json={"is_paused": False})
    assert response.status_code == 200 and response.json()["is_paused"] is False, response.text


def terminal_runs(stack: Stack, dag_id: str) -> list[dict] | None:
    fail_fast_on_failed_tasks(stack, dag_id)
    runs = backfill_runs(stack, dag_id)
    return runs if runs and all(r["state"] in TERMINAL for r in runs) else None


def backfill_runs(stack: Stack, dag_id: str) -> list[dict]:
    response = stack.api("GET", f"/api/v2/dags/{dag_id}/dagRuns", params={"limit": 100})
    assert response.status_code == 200, response.text
    return [r for r in response.json()["dag_runs"] if r["run_type"] == "backfill"]


def fail_fast_on_failed_tasks(stack: Stack, dag_id: str) -> None:
    """A failed task, or one waiting minutes for its retry, will not turn green inside the budget."""
    tis = stack.api("GET", f"/api/v2/dags/{dag_id}/dagRuns/~/taskInstances", params={"limit": 500}).json()
    states = [(t["dag_run_id"], t["task_id"], t["state"]) for t in tis["task_instances"]]
    bad = [ti for ti in states if ti[2] in FAILED_TASK_STATES]
    if bad:
        pytest.fail(f"{dag_id}: task instances failed: {bad}\n{stack.diagnostics()}")
    deferred = [ti[:2] for ti in states if ti[2] == "deferred"]
    if deferred:
        pytest.fail(f"{dag_id}: {deferred} deferred, but this stack runs no triggerer: start one in this test")


def check_online_scores(results: ResultsStore, days) -> None:
    """Backfilled online evals wrote one run per day and no score twice."""
    with results.engine.connect() as conn:
        total, distinct = conn.execute(sa.text(
            "SELECT count(*), count(DISTINCT (s.run_id, s.item_id, s.metric)) "
            "FROM eval_scores s JOIN eval_runs r ON r.run_id = s.run_id WHERE r.suite = 'online'"
        )).one()  # fmt: skip
        per_day = conn.execute(sa.text(
            "SELECT logical_date, target, count(*) FROM eval_runs WHERE suite = 'online' GROUP BY logical_date, target"
        )).all()  # fmt: skip
    assert total > 0 and total == distinct, f"{total} online score rows, {distinct} distinct (run, item, metric)"
    assert all(n == 1 for _, _, n in per_day), per_day
    assert sorted({d for d, _, _ in per_day}) == days, per_day


def check_ui_through_api_server(stack: Stack, results: ResultsStore, days) -> None:
    """The plugin is loaded by the api-server, guarded by Airflow's auth, and shows the latest scores."""
    plugins = stack.api("GET", "/api/v2/plugins").json()["plugins"]
    [plugin] = [p for p in plugins if p["name"] == "ragwatch"]
    assert [v["href"] for v in plugin["external_views"]] == ["/ragwatch/"]
    assert stack.api("GET", "/api/v2/plugins/importErrors").json()["total_entries"] == 0

    # All-admins mode makes every request without credentials an admin (SimpleAllAdminMiddleware),
    # so the guard shows with a bad credential: the plugin refuses it exactly as /api/v2 does.
    with httpx.Client(base_url=stack.base_url, timeout=30, headers={"Authorization": "Bearer not-a-jwt"}) as forged:
        assert forged.get("/api/v2/dags").status_code == 403
        assert forged.get("/ragwatch/api/latest").status_code == 403
        assert forged.get("/ragwatch/").status_code == 403

    latest = stack.api("GET", "/ragwatch/api/latest")
    assert latest.status_code == 200, latest.text
    online = latest.json()["suites"]["online"]["runs"]
    if "online_eval" in stack.dag_ids:
        assert online and {r["logical_date"] for r in online} == {days[-1].isoformat()}
        for run in online:
            assert run["metrics"] and run["report_url"], run
            report = stack.api("GET", run["report_url"])
            assert report.status_code == 200 and f"online · {days[-1]}" in report.text
    else:
        assert online == [] and "online_eval" in latest.json()["suites"]["online"]["next_step"]

    settings = Settings(home=stack.home, results_url=stack.results_url, anonymizer_key="unused")
    seed_two_runs(results, settings)
    page = stack.api("GET", "/ragwatch/")
    assert page.status_code == 200, page.text
    assert DAY.isoformat() in page.text and "0.700" in page.text and "<script>" not in page.text
    assert HOSTILE.replace("<", "&lt;").replace(">", "&gt;").replace('"', "&#34;") in page.text
    [offline] = stack.api("GET", "/ragwatch/api/latest").json()["suites"]["offline"]["runs"]
    assert offline["report_url"].startswith("/ragwatch/reports/")  # the mount prefix is in every link
    report = stack.api("GET", offline["report_url"])
    assert report.status_code == 200 and "sandbox" in report.headers["content-security-policy"]
    assert stack.api("GET", "/ragwatch/reports/no-such-run").status_code == 404

    # A person without a session is sent to Airflow's login with `next` pointing here: the login
    # sets the session cookie and lands back on the page.
    with httpx.Client(base_url=stack.base_url, timeout=30, follow_redirects=True) as browser:
        landed = browser.get("/auth/token/login", params={"next": f"{stack.base_url}/ragwatch/"})
        assert "_token" in browser.cookies
    assert landed.status_code == 200 and str(landed.url).endswith("/ragwatch/") and "0.700" in landed.text

"""The `make up` stack for the test session: started once by the `stack` fixture (tests/conftest.py)
through the very code `make up EXECUTOR=celery WORKERS=2` runs (deploy/local_stack/), on free ports,
in a throwaway home, with a small first-start seed (6 days x 120 traces), the small test corpus and
a smaller golden set (GOLDEN_PARAMS, in the data workspace's params.yaml); stopped by the same code
as `make down`, which must leave no process of it running. Every stack test runs on its two Celery
workers.

Artifacts (screenshots, the stack's logs when a test failed) go to `test-artifacts/` (git-ignored).
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

import httpx
import yaml

from deploy import local_stack

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
SEED_DAYS, SEED_PER_DAY = 6, 120
TEST_CORPUS = ROOT / "tests" / "data" / "corpus"
GOLDEN_PARAMS = {"seeds": 12, "multi_hop": 4, "adversarial": 3, "tool_triples": 6, "from_traces": 4}
"""Every question type and the tool triples are there, in a set the offline eval judges in a
minute."""
TERMINAL = {"success", "failed"}
EXECUTOR, WORKERS = "celery", 2
"""The session's stack: compose's executor, two workers that share no local folder (the
LocalExecutor is `make up`'s default; its plan is checked against compose in
tests/integration/test_stack.py, its tasks run by `airflow dags test` in
tests/integration/test_dags.py)."""


_PATH_PARAMETER = re.compile(r"\{(\w+)(?::\w+)?\}")


def plugin_routes(values: dict[str, str]) -> list[tuple[str, str]]:
    """(method, path) of every route of the ragwatch plugin's app, read from the app
    `plugins/ragwatch_plugin.py` registers (`create_app`), so that a route added later is requested
    by the auth tests too. `values` fills the path parameters (`run_id`): one it lacks fails here,
    and a new parameter is given a value on purpose."""
    if str(ROOT / "plugins") not in sys.path:
        sys.path.insert(
            0, str(ROOT / "plugins")
        )  # where Airflow puts it: the plugin imports `ragwatch_airflow`
    from fastapi.routing import APIRoute
    from ragwatch_airflow.ui import create_app

    app = create_app()
    # A mount or a plain Starlette route would not show its paths here: the list would miss them.
    assert app.routes and all(isinstance(route, APIRoute) for route in app.routes), app.routes
    return sorted(
        (method, _PATH_PARAMETER.sub(lambda m: quote(values[m.group(1)], safe=""), route.path))
        for route in app.routes
        for method in route.methods
    )


@dataclass
class StackSession:
    home: Path
    plan: object
    """local_stack.Plan: ports, secrets, the Airflow environment, the services and their argv."""
    startup_s: float
    timings: dict[str, float] = field(default_factory=dict)
    scheduled: dict[str, dict] | None = None
    """The first scheduled runs, once a test waited for them (tests/integration/test_stack.py)."""
    _token: str | None = None

    @property
    def ls(self):
        return local_stack

    @property
    def base_url(self) -> str:
        return self.plan.airflow_url

    def token(self) -> str:
        if self._token is None:
            user, password = self.plan.admin
            response = httpx.post(
                f"{self.base_url}/auth/token",
                json={"username": user, "password": password},
                timeout=30,
            )
            assert response.status_code == 201, response.text
            self._token = response.json()["access_token"]
        return self._token

    def api(self, method: str, path: str, **kwargs) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.token()}"}
        return httpx.request(
            method, f"{self.base_url}{path}", headers=headers, timeout=60, **kwargs
        )

    def prometheus(self, expr: str) -> list[dict]:
        response = httpx.get(
            f"{self.plan.prometheus_url}/api/v1/query", params={"query": expr}, timeout=30
        )
        body = response.json()
        assert response.status_code == 200 and body["status"] == "success", f"{expr}: {body}"
        return body["data"]["result"]

    def runs(self, dag_id: str, run_type: str | None = None) -> list[dict]:
        response = self.api("GET", f"/api/v2/dags/{dag_id}/dagRuns", params={"limit": 100})
        assert response.status_code == 200, response.text
        return [
            r for r in response.json()["dag_runs"] if run_type is None or r["run_type"] == run_type
        ]

    def task_states(self, dag_id: str) -> list[tuple]:
        tis = self.api(
            "GET", f"/api/v2/dags/{dag_id}/dagRuns/~/taskInstances", params={"limit": 500}
        ).json()
        return [
            (t["dag_run_id"], t["task_id"], t["map_index"], t["state"], t["try_number"])
            for t in tis["task_instances"]
        ]

    def wait_for_runs(self, dag_id: str, run_type: str, count: int, timeout: float) -> list[dict]:
        """Wait until `count` runs of that type exist and all are terminal; fail fast on a failed
        task."""
        deadline = time.monotonic() + timeout
        while True:
            self.check_alive()
            runs = self.runs(dag_id, run_type)
            failed = [t for t in self.task_states(dag_id) if t[3] in ("failed", "upstream_failed")]
            if failed:
                raise AssertionError(f"{dag_id}: failed tasks {failed}\n{self.diagnostics()}")
            if len(runs) >= count and all(r["state"] in TERMINAL for r in runs):
                return runs
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{dag_id}: {run_type} runs not finished after {timeout:.0f} s: "
                    f"{[(r['dag_run_id'], r['state']) for r in runs]}\n{self.diagnostics()}"
                )
            time.sleep(5)

    def check_alive(self) -> None:
        dead = [
            name
            for name in self.plan.services
            if self.ls.running_pid(self.plan.state, name) is None
        ]
        assert not dead, f"stack services died: {dead}\n{self.diagnostics()}"

    def diagnostics(self) -> str:
        logs = self.plan.state / "logs"
        parts = []
        for name in (
            "airflow-scheduler",
            "airflow-apiserver",
            "airflow-dag-processor",
            *self.plan.workers,
        ):
            path = logs / f"{name}.log"
            text = path.read_text(errors="replace")[-3000:] if path.exists() else "(no log)"
            parts.append(f"--- {path} ---\n{text}")
        return "\n".join(parts)


def start_stack() -> StackSession:
    ls = local_stack
    wait_for_quiet_schedules()
    # Not pytest's tmp_path: the PostgreSQL server runs as `postgres`, which cannot enter
    # /tmp/pytest-of-root (mode 700).
    home = Path(tempfile.mkdtemp(prefix="ragwatch-stack-"))
    home.chmod(0o755)
    ports = {name: ls.free_port() for name in ls.DEFAULT_PORTS}
    began = time.monotonic()
    try:
        # A smaller golden set than the project's params.yaml asks for, through the workspace's own
        # params.yaml (the data team's knob: ensure_workspace keeps one it finds).
        workspace = Path(
            ls.plan_for(home, ports, EXECUTOR, WORKERS).airflow_env["RAGWATCH_WORKSPACE"]
        )
        workspace.mkdir(parents=True)
        params = yaml.safe_load((ROOT / "params.yaml").read_text())
        params["golden"].update(GOLDEN_PARAMS)
        (workspace / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        plan = ls.up(
            home,
            ports=ports,
            seed_days=SEED_DAYS,
            seed_per_day=SEED_PER_DAY,
            corpus=TEST_CORPUS,
            executor=EXECUTOR,
            workers=WORKERS,
        )
    except BaseException as exc:
        keep_logs(home)
        left = ls.down(home)
        raise RuntimeError(
            f"`make up`'s code failed in the test session ({exc}); stopped: {not left}; "
            f"logs copied to {ARTIFACTS / 'stack-logs'}"
        ) from exc
    return StackSession(home=home, plan=plan, startup_s=time.monotonic() - began)


def wait_for_quiet_schedules() -> None:
    """Start only when no DAG's schedule fires during the session: a run the scheduler starts
    mid-session (midnight's trace_sampling on a day the demo traffic lacks, Monday's golden_build)
    changes what the tests read."""
    from tests.support.schedule import STACK_SESSION, next_fire, quiet_start

    now = datetime.now(UTC)
    start = quiet_start(now)
    if start > now:
        fire, dag_id = next_fire(now)
        print(
            f"\nthe stack waits {(start - now).total_seconds():.0f} s: {dag_id}'s schedule fires at {fire:%H:%M} UTC, "
            f"within the {STACK_SESSION} the stack tests take",
            flush=True,
        )
        time.sleep((start - now).total_seconds())


def stop_stack(session: StackSession, *, failed: bool) -> list[tuple[int, str]]:
    ls = local_stack
    if failed:
        keep_logs(session.home)
    left = ls.down(session.home)
    if (
        not left and not failed
    ):  # a failed session keeps its home (databases, workspace) to look into
        shutil.rmtree(session.home, ignore_errors=True)
    return left


def keep_logs(home: Path) -> None:
    target = ARTIFACTS / "stack-logs"
    shutil.rmtree(target, ignore_errors=True)
    source = home / "stack" / "logs"
    if source.exists():
        shutil.copytree(source, target)

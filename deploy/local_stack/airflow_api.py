"""Airflow through its REST API: health, parsed DAGs, the first runs."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

from deploy.local_stack.model import Plan, StackError
from deploy.local_stack.state import running_pid


class Airflow:
    def __init__(self, plan: Plan):
        self.plan = plan
        self.token: str | None = None

    def login(self) -> str | None:
        user, password = self.plan.admin
        try:
            response = httpx.post(
                f"{self.plan.airflow_url}/auth/token",
                json={"username": user, "password": password},
                timeout=10,
            )
        except httpx.HTTPError:
            return None
        if response.status_code == 201:
            self.token = response.json()["access_token"]
        return self.token

    def api(self, method: str, path: str, **kwargs) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.token}"}
        return httpx.request(
            method, f"{self.plan.airflow_url}{path}", headers=headers, timeout=30, **kwargs
        )


def wait_until(what: str, probe, timeout: float, plan: Plan, interval: float = 2.0, restart=None):
    """Poll `probe` until it returns something true. A service of the stack that exits meanwhile
    fails the wait, unless `restart(name)` starts it again and says so (True)."""
    deadline = time.monotonic() + timeout
    while True:
        dead = [name for name in plan.services if running_pid(plan.state, name) is None]
        if restart is not None:
            dead = [name for name in dead if not restart(name)]
        if dead:
            logs = "\n".join(_tail(plan.state / "logs" / f"{name}.log") for name in dead)
            raise StackError(f"{', '.join(dead)} exited while waiting for {what}\n{logs}")
        result = probe()
        if result:
            return result
        if time.monotonic() > deadline:
            raise StackError(
                f"gave up after {timeout:.0f} s waiting for {what}; logs under {plan.state / 'logs'}"
            )
        time.sleep(interval)


def _tail(path: Path, chars: int = 3000) -> str:
    text = path.read_text(errors="replace") if path.exists() else "(no log)"
    return f"--- {path}, last {chars} chars ---\n{text[-chars:]}"


def _ok(url: str) -> bool:
    try:
        return httpx.get(url, timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


def _healthy(airflow: Airflow) -> bool:
    try:
        health = airflow.api("GET", "/api/v2/monitor/health").json()
    except (httpx.HTTPError, ValueError):
        return False
    return all(
        (health.get(part) or {}).get("status") == "healthy"
        for part in ("metadatabase", "scheduler", "triggerer", "dag_processor")
    )


def _parsed(airflow: Airflow, dag_ids: list[str]) -> bool:
    try:
        errors = airflow.api("GET", "/api/v2/importErrors").json()
    except httpx.HTTPError:
        return False
    if errors.get("total_entries"):
        raise StackError(
            "DAG import errors:\n"
            + "\n".join(e["stack_trace"][-2000:] for e in errors["import_errors"])
        )
    return all(
        airflow.api("GET", f"/api/v2/dags/{dag_id}").status_code == 200 for dag_id in dag_ids
    )


def _first_run(airflow: Airflow, dag_id: str, timeout: float) -> None:
    """Unpause `dag_id` and wait for one successful run: the scheduled one its timetable makes due
    at once, else a manual one (so the first golden set is not built twice)."""
    dag = airflow.api("GET", f"/api/v2/dags/{dag_id}").json()
    due = dag.get("next_dagrun_run_after")
    response = airflow.api("PATCH", f"/api/v2/dags/{dag_id}", json={"is_paused": False})
    if response.status_code != 200:
        raise StackError(f"could not unpause {dag_id}: {response.status_code} {response.text}")
    if due and datetime.fromisoformat(due.replace("Z", "+00:00")) <= datetime.now(UTC):
        run_id = wait_until(
            f"the scheduler to create {dag_id}'s scheduled run",
            lambda: next(
                (
                    r["dag_run_id"]
                    for r in airflow.api("GET", f"/api/v2/dags/{dag_id}/dagRuns").json()["dag_runs"]
                ),
                None,
            ),
            120,
            airflow.plan,
        )
    else:
        response = airflow.api(
            "POST", f"/api/v2/dags/{dag_id}/dagRuns", json={"logical_date": None}
        )
        if response.status_code != 200:
            raise StackError(f"could not trigger {dag_id}: {response.status_code} {response.text}")
        run_id = response.json()["dag_run_id"]

    last = {"shown": "", "at": 0.0}

    def finished():
        try:  # a loaded machine's api-server may take longer than a request's timeout: ask again
            state = airflow.api("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}").json()["state"]
        except httpx.HTTPError:
            return None
        progress = task_progress(airflow, dag_id, run_id)
        if (
            progress != last["shown"] and time.monotonic() - last["at"] > 20
        ):  # a line when it changes, at most every 20 s
            print(f"  {datetime.now(UTC):%H:%M:%S} {dag_id}: {progress}", flush=True)
            last.update(shown=progress, at=time.monotonic())
        return state if state in ("success", "failed") else None

    state = wait_until(f"{dag_id} run {run_id}", finished, timeout, airflow.plan, interval=5)
    if state != "success":
        logs = airflow.plan.airflow_env["AIRFLOW__LOGGING__BASE_LOG_FOLDER"]
        raise StackError(
            f"{dag_id} run {run_id} {state}: task logs under {logs}/dag_id={dag_id}/run_id={run_id}"
        )


def task_progress(airflow: Airflow, dag_id: str, run_id: str) -> str:
    """One line of a run's task states, in the DAG's order: `plan ✓ · generate 2/4 (1 running) ·
    filter_candidates …`."""
    try:
        tis = airflow.api(
            "GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances", params={"limit": 1000}
        ).json()
    except (httpx.HTTPError, ValueError):
        return "(task states not available)"
    tasks: dict[str, list[str | None]] = {}
    for ti in sorted(
        tis.get("task_instances", []), key=lambda t: (t.get("start_date") or "~", t["map_index"])
    ):
        tasks.setdefault(ti["task_id"], []).append(ti["state"])
    parts = []
    for task_id, states in tasks.items():
        done, running = (
            states.count("success"),
            sum(s in ("running", "queued", "scheduled") for s in states),
        )
        failed = sum(s in ("failed", "up_for_retry", "upstream_failed") for s in states)
        mark = "✓" if done == len(states) else f"{done}/{len(states)}" if len(states) > 1 else "…"
        parts.append(
            f"{task_id} {mark}"
            + (f" ({running} running)" if running and len(states) > 1 else "")
            + (f" ({failed} failed or retrying)" if failed else "")
        )
    return " · ".join(parts) or "waiting for the scheduler"


def still_running(airflow: Airflow, dag_ids: list[str]) -> list[str]:
    """The runs not finished yet, e.g. `trace_sampling scheduled__2026-12-01T00:00:00+00:00
    (running)`."""
    found = []
    for dag_id in dag_ids:
        try:
            runs = airflow.api(
                "GET", f"/api/v2/dags/{dag_id}/dagRuns", params={"state": ["queued", "running"]}
            ).json()
        except (httpx.HTTPError, ValueError):
            continue
        found += [f"{dag_id} {r['dag_run_id']} ({r['state']})" for r in runs.get("dag_runs", [])]
    return found

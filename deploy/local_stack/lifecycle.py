"""up and down: start (or repair) every process in order, stop them all, report which run."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from deploy.local_stack.airflow_api import (
    Airflow,
    _first_run,
    _healthy,
    _ok,
    _parsed,
    _tail,
    still_running,
    wait_until,
)
from deploy.local_stack.layout import (
    AIRFLOW_ORDER,
    CLI_STACK,
    EXECUTORS,
    INSTALL_HINT,
    LOOPBACK,
    ROOT,
)
from deploy.local_stack.model import Plan, StackError
from deploy.local_stack.plan import expected_dag_ids, redis_config
from deploy.local_stack.postgres import _run, ensure_postgres, postgres_pid, stop_postgres
from deploy.local_stack.state import (
    _service_names,
    _signal_group,
    _stop_services,
    load_executor,
    plan_for,
    running_pid,
    spawn_detached,
    stack_processes,
    start,
    state_dir,
)


def up(
    home: Path | None = None,
    *,
    ports: dict[str, int] | None = None,
    seed_days: int | None = None,
    seed_per_day: int | None = None,
    corpus: Path | None = None,
    timeout: float = 1800,
    executor: str | None = None,
    workers: int | None = None,
) -> Plan:
    if home is None and os.environ.get(CLI_STACK):
        print(
            f"this shell sourced the cli.env of the stack at {os.environ[CLI_STACK]}: acting on that stack"
        )
    plan = plan_for(home, ports, executor, workers)
    for name in (
        "prometheus",
        "prometheus-pushgateway",
        "promtool",
        *(["redis-server"] if plan.workers else []),
    ):
        if shutil.which(name) is None:
            raise StackError(f"{name} not found; {INSTALL_HINT}")
    for sub in (
        "logs",
        "run",
        "bootstrap",
        "airflow",
        "pushgateway-data",
        "prometheus-data",
        "redis-data",
    ):
        (plan.state / sub).mkdir(parents=True, exist_ok=True)
    for name in plan.workers:
        for sub in ("home", "tmp", "airflow"):
            (plan.state / "workers" / name / sub).mkdir(parents=True, exist_ok=True)
    _move_shared_folders(plan)
    logs = plan.state / "logs"
    if not (plan.state / "bootstrap" / "golden").exists():
        print(
            "first start: seeds demo traffic, indexes the corpus and builds a first golden set; about 3 minutes on "
            "a 2-core machine (a later `make up` takes about a minute)",
            flush=True,
        )
    print(
        f"ragwatch stack: {EXECUTORS[plan.executor]}"
        + (f" with {len(plan.workers)} Celery workers" if plan.workers else "")
        + f"; state and logs under {plan.state}"
    )

    ensure_postgres(plan)
    (plan.state / "prometheus.yml").write_text(plan.prometheus_config)
    _run(["promtool", "check", "config", str(plan.state / "prometheus.yml")], logs / "promtool.log")
    if plan.workers:
        config = plan.state / "redis.conf"
        config.touch(mode=0o600)
        config.write_text(redis_config(plan))
    for name in ("pushgateway", "prometheus", *(["redis"] if plan.workers else [])):
        if running_pid(plan.state, name) is None:
            start(plan, plan.services[name])

    # First start only: the stand-in trace store gets demo traffic (written as the application
    # would, through traces_writer) and the corpus is indexed, beside Airflow's start-up.
    bootstrap = plan.state / "bootstrap"
    setup: dict[str, subprocess.Popen] = {}
    cli = [sys.executable, "-m", "pipelines.cli"]
    writer_env = plan.airflow_env | {
        "RAGWATCH_TRACE_STORE_URL": plan.postgres_url(
            "traces_writer", "TRACES_WRITER_PASSWORD", "traces"
        )
    }
    seed_args = [
        *(["--days", str(seed_days)] if seed_days else []),
        *(["--per-day", str(seed_per_day)] if seed_per_day else []),
    ]
    for step, argv, env in (
        ("seed", [*cli, "demo", "seed", *seed_args], writer_env),
        (
            "corpus-index",
            [*cli, "corpus", "index", str(corpus)] if corpus else [*cli, "demo", "corpus"],
            plan.airflow_env,
        ),
    ):
        if not (bootstrap / step).exists():
            log = open(logs / f"{step}.log", "ab")
            setup[step] = spawn_detached(argv, log, cwd=ROOT, env=env)
            log.close()
            print(f"first start: {step} (log {logs / f'{step}.log'})")

    try:
        _start_airflow(plan, setup, timeout)
    finally:
        for proc in setup.values():  # a failed start leaves no setup command behind
            if proc.poll() is None:
                _signal_group(proc.pid, signal.SIGKILL)
                proc.wait()
    return plan


def _move_shared_folders(plan: Plan) -> None:
    """A stack made before the Qdrant and DVC remote folders moved out of its RAGWATCH_HOME keeps
    them."""
    home = Path(plan.airflow_env["RAGWATCH_HOME"])
    for old, new in (
        (home / "qdrant", plan.airflow_env["RAGWATCH_QDRANT_PATH"]),
        (home / "dvc-remote", plan.airflow_env["RAGWATCH_DVC_REMOTE"]),
    ):
        if old.is_dir() and not Path(new).exists():
            old.rename(new)


RESTARTS = 3
"""Restarts of one service within one `up` before its exit fails the start."""


def _start_airflow(plan: Plan, setup: dict[str, subprocess.Popen], timeout: float) -> None:
    logs, bootstrap = plan.state / "logs", plan.state / "bootstrap"
    first_start = not (bootstrap / "golden").exists()
    deadline = time.monotonic() + 60
    while plan.workers and not _redis_ready(
        plan
    ):  # the scheduler and the workers connect to the broker at start
        if running_pid(plan.state, "redis") is None or time.monotonic() > deadline:
            raise StackError(f"redis did not answer\n{_tail(logs / 'redis.log')}")
        time.sleep(0.3)
    missing = [
        name for name in (*AIRFLOW_ORDER, *plan.workers) if running_pid(plan.state, name) is None
    ]
    if missing:
        # Compose runs airflow-init on every `up` before any other Airflow service; so does this.
        print("airflow-init: deploy/airflow/init.sh (migrate, admin login, pools)")
        _run(plan.init_argv, logs / "airflow-init.log", plan.airflow_env)
        for name in missing:
            start(plan, plan.services[name])
        print(f"started {', '.join(missing)}")
    else:
        print("Airflow already running")

    airflow = Airflow(plan)
    restarts: dict[str, int] = {}

    def restart(name: str) -> bool:
        # Compose restarts a service that exits (`restart: unless-stopped`). An Airflow process that
        # lost its database (PostgreSQL killed and recovering) exits once it reconnects too early:
        # start it again, a few times at most, so that a crash loop still fails with its log.
        if restarts.get(name, 0) >= RESTARTS:
            return False
        restarts[name] = restarts.get(name, 0) + 1
        print(
            f"{name} exited while the stack started: restarted ({restarts[name]} of {RESTARTS})",
            flush=True,
        )
        start(plan, plan.services[name])
        return True

    for name in ("pushgateway", "prometheus"):
        wait_until(
            f"{name} to be healthy",
            lambda n=name: _ok(plan.services[n].ready_url),
            120,
            plan,
            restart=restart,
        )
    wait_until("the api-server to log the admin in", airflow.login, 300, plan, restart=restart)
    healthy = "scheduler, triggerer and dag-processor to report healthy"
    wait_until(healthy, lambda: _healthy(airflow), 300, plan, restart=restart)
    for name in plan.workers:
        ready = f"Celery worker {name} to be ready"
        wait_until(ready, lambda n=name: _worker_ready(plan, n), 300, plan, restart=restart)
    dag_ids = expected_dag_ids()
    wait_until(
        f"the dag-processor to parse {dag_ids}",
        lambda: _parsed(airflow, dag_ids),
        300,
        plan,
        restart=restart,
    )

    for step, proc in setup.items():
        if proc.wait(timeout=timeout) != 0:
            raise StackError(f"first start: {step} failed\n{_tail(logs / f'{step}.log')}")
        (bootstrap / step).write_text(datetime.now(UTC).isoformat() + "\n")
    if not (bootstrap / "golden").exists() and "golden_build" in dag_ids:
        # offline_eval needs a published golden set: build the first one before its schedule runs.
        print(
            "first start: a golden_build run, so that offline_eval has a golden set (under a minute with the offline "
            "model on 2 cores; its tasks' states below)",
            flush=True,
        )
        _first_run(airflow, "golden_build", timeout)
        (bootstrap / "golden").write_text(datetime.now(UTC).isoformat() + "\n")

    for dag_id in dag_ids:
        response = airflow.api("PATCH", f"/api/v2/dags/{dag_id}", json={"is_paused": False})
        if response.status_code != 200:
            raise StackError(f"could not unpause {dag_id}: {response.status_code} {response.text}")

    cli_env = plan.state / "cli.env"
    cli_env.write_text(
        "".join(f"{k}={shlex.quote(v)}\n" for k, v in sorted(plan.cli_env().items()))
    )
    cli_env.chmod(0o600)
    user, password = plan.admin
    running = ("\n" + " " * 25).join(still_running(airflow, dag_ids)) or (
        "nothing yet: the scheduler starts the due runs (yesterday's trace_sampling, then online_eval) within a minute"
        if first_start
        else "no run"
    )
    print(f"""
ragwatch stack is up; everything listens on {LOOPBACK} only.
  Airflow UI, REST API   {plan.airflow_url}   user {user}, password {password}
                         (AIRFLOW_ADMIN_PASSWORD in {plan.state / ".env"})
  ragwatch page          {plan.airflow_url}/ragwatch/
  Prometheus (alerts)    {alerts_page(plan)}
  Pushgateway            {plan.pushgateway_url}
  DAGs unpaused          {", ".join(dag_ids)}
  executor               {EXECUTORS[plan.executor]}{workers_line(plan)}
  the CLI against it     set -a; . {cli_env}; set +a
  logs                   {logs}
  still running          {running}
                         (their tasks: the DAG's Grid view in the UI; the ragwatch page shows scores once an eval finished)
Stop it with `make down`.""")


def workers_line(plan: Plan) -> str:
    if not plan.workers:
        return ""
    first = plan.services[plan.workers[0]].env
    return (
        f", {len(plan.workers)} Celery workers ({', '.join(plan.workers)}; each with its own RAGWATCH_HOME, TMPDIR "
        f"and working directory under {plan.state / 'workers'}), broker Redis on {LOOPBACK}:{plan.ports.redis}\n"
        f"                         shared: the data workspace {first['RAGWATCH_WORKSPACE']}"
    )


def alerts_page(plan: Plan) -> str:
    """Prometheus' alerts page: `/alerts` from 3.0 on (compose's image), `/classic/alerts` on the
    2.x Debian installs, whose `/alerts` is a 404 without the new web UI."""
    for path in ("/alerts", "/classic/alerts"):
        if _ok(plan.prometheus_url + path):
            return plan.prometheus_url + path
    return f"{plan.prometheus_url}/alerts (not answering yet)"


def _redis_ready(plan: Plan) -> bool:
    try:
        with socket.create_connection((LOOPBACK, plan.ports.redis), timeout=2) as conn:
            conn.sendall(f"AUTH {plan.secrets['REDIS_PASSWORD']}\r\nPING\r\n".encode())
            answer = b""
            while answer.count(b"\r\n") < 2:
                chunk = conn.recv(256)
                if not chunk:
                    break
                answer += chunk
    except OSError:
        return False
    return answer == b"+OK\r\n+PONG\r\n"


def _worker_ready(plan: Plan, name: str) -> bool:
    """Celery logs `<node> ready.` once it consumes from the broker (checked since the worker's last
    start)."""
    log = plan.state / "logs" / f"{name}.log"
    text = log.read_text(errors="replace") if log.exists() else ""
    return f"{name}@" in text and " ready." in text.rsplit("\n=== ", 1)[-1]


def down(home: Path | None = None, timeout: float = 30) -> list[tuple[int, str]]:
    """Stop everything; return what was still running afterwards (nothing, normally)."""
    state = state_dir(home)
    _stop_services(state, _service_names(state), timeout)
    stop_postgres(state)
    for pid, _ in stack_processes(
        state
    ):  # stragglers that left their group (or a crashed leader's)
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and stack_processes(state):
        time.sleep(0.5)
    for pid, _ in stack_processes(state):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    time.sleep(0.5)
    left = stack_processes(state)
    for path in (state / "run").glob("*.pid") if not left else []:
        path.unlink()
    print(f"ragwatch stack stopped ({state})" if not left else f"still running: {left}")
    return left


def status(home: Path | None = None) -> dict[str, int | None]:
    state = state_dir(home)
    executor, workers = load_executor(state)
    celery = (
        ["redis", *(f"airflow-worker-{n}" for n in range(1, workers + 1))]
        if executor == "celery"
        else []
    )
    found = {
        name: running_pid(state, name)
        for name in ("pushgateway", "prometheus", *AIRFLOW_ORDER, *celery)
    }
    found["postgres"] = postgres_pid(state)
    return found

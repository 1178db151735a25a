"""`make up` / `make down`: docker-compose.yml's stack on one machine, without Docker.

    python -m deploy.local_stack up [--executor local|celery] [--workers N]
                                    [--seed-days N] [--seed-per-day N] [--corpus DIR]
    python -m deploy.local_stack status | down | env

What runs is read from the compose file, not written a second time: every Airflow process gets the
`x-airflow-common` environment (secrets interpolated from a `.env` that `deploy/make-env.sh`
generates, compose host names rewritten to 127.0.0.1 and this stack's ports), the commands of the
compose services (`api-server`, `scheduler`, `dag-processor`, `triggerer`, and
`deploy/airflow/init.sh` for `airflow-init`), PostgreSQL is initialised by
`deploy/postgres/init.sql`, and Prometheus gets `monitoring/prometheus.yml` and its rules with only
the scrape targets rewritten. What cannot be the same on one machine without Docker is listed in
`ONE_MACHINE` with the reason (and in `LOCAL_EXECUTOR`, what the default executor leaves out), and
tests/integration/test_stack.py holds this package to the compose file: a difference that is not
listed fails the test.

Two executors: LocalExecutor (the default: the scheduler runs the tasks) or, with `--executor
celery`, compose's CeleryExecutor with Redis as the broker and N Celery workers (`--workers`,
default 2), each set up as if on a machine of its own: its own RAGWATCH_HOME, temp folder, working
directory, Airflow home and host name. They share only what workers on several machines share: the
services (PostgreSQL, Redis, the api-server, the Pushgateway, and the folders standing in for the
Qdrant and MinIO services) and the data workspace (a shared filesystem mount there, one folder
here), plus the task log folder (see `WORKER_ENV_DOC`). The executor is kept in `executor.json`: a
later `up` without `--executor` brings back the same one, and another one needs a `down` first.

Everything binds to 127.0.0.1; state and logs live under `<RAGWATCH_HOME or .ragwatch>/stack/`.
`up` is idempotent and recovers from a crash (dead processes are restarted, a half-initialised
database is initialised again); `down` stops every process the stack started, including
stragglers found by the `RAGWATCH_STACK` marker in their environment.

It imports no Airflow and, of `pipelines`, only `available_cpus`: it runs them as processes. Its
PostgreSQL commands are the harness's launcher's (`ragwatch_harness.postgres`), as the tests'
clusters are.

The modules follow the order a stack comes up in: `layout` (where the inputs are), `differences`
(from compose, with their reasons), `model` (ports, services, the plan), `compose` (reading the
compose file and the Dockerfile), `plan`, `state` (ports, secrets and processes kept on disk),
`postgres`, `airflow_api`, `lifecycle` (up, down, status), `monitoring` (`make demo`'s own), and
`__main__` (the command line).
"""

from __future__ import annotations

from deploy.local_stack.compose import (
    compose_file,
    derived_prometheus_config,
    dockerfile_paths,
    interpolate,
)
from deploy.local_stack.differences import (
    AIRFLOW_LOCAL_ENV_DOC,
    LOCAL_EXECUTOR,
    ONE_MACHINE,
    WORKER_ENV_DOC,
    differences,
)
from deploy.local_stack.layout import BIN, MARKER, ROOT
from deploy.local_stack.lifecycle import alerts_page, down, status, up, workers_line
from deploy.local_stack.model import DEFAULT_PORTS, SERVICE_PORTS, Plan, Ports, Service, StackError
from deploy.local_stack.monitoring import monitoring_down, monitoring_up
from deploy.local_stack.plan import build_plan, expected_dag_ids, redis_config
from deploy.local_stack.state import (
    free_port,
    load_secrets,
    plan_for,
    running_pid,
    stack_processes,
    state_dir,
)

__all__ = [
    "AIRFLOW_LOCAL_ENV_DOC",
    "BIN",
    "DEFAULT_PORTS",
    "LOCAL_EXECUTOR",
    "MARKER",
    "ONE_MACHINE",
    "ROOT",
    "SERVICE_PORTS",
    "WORKER_ENV_DOC",
    "Plan",
    "Ports",
    "Service",
    "StackError",
    "alerts_page",
    "build_plan",
    "compose_file",
    "derived_prometheus_config",
    "differences",
    "dockerfile_paths",
    "down",
    "expected_dag_ids",
    "free_port",
    "interpolate",
    "load_secrets",
    "monitoring_down",
    "monitoring_up",
    "plan_for",
    "redis_config",
    "running_pid",
    "stack_processes",
    "state_dir",
    "status",
    "up",
    "workers_line",
]

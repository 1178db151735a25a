"""Where the stack's inputs live, and the names every part of it shares."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
MAKE_ENV = ROOT / "deploy" / "make-env.sh"
INIT_SQL = ROOT / "deploy" / "postgres" / "init.sql"
PROMETHEUS_CONFIG = ROOT / "monitoring" / "prometheus.yml"
DAGS = ROOT / "dags"
BIN = Path(sys.executable).parent
LOOPBACK = "127.0.0.1"
MARKER = "RAGWATCH_STACK"
"""Every process of a stack carries MARKER=<its state dir> in its environment: `down` finds them by
it."""
CLI_STACK = "RAGWATCH_CLI_STACK"
"""What cli.env names its stack's state folder with, instead of MARKER: a shell that sourced it is
not one of the stack's processes (`down` must not signal it), and `make up` / `make down` from it
act on that same stack rather than on a new one nested under the stack's RAGWATCH_HOME."""
INSTALL_HINT = (
    "run `make up` (scripts/system-deps.sh installs Debian's postgresql, prometheus, prometheus-pushgateway, "
    "redis-server)"
)
EXECUTORS = {"local": "LocalExecutor", "celery": "CeleryExecutor"}
DEFAULT_WORKERS = 2
AIRFLOW_ORDER = (
    "airflow-apiserver",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
)

"""The plan of a stack: its ports, its services, the environment each process gets."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from deploy.local_stack.layout import CLI_STACK, LOOPBACK, MARKER, ROOT


class StackError(RuntimeError):
    """The stack could not be brought up or down; the message says why and where the log is."""


@dataclass
class Ports:
    airflow: int
    prometheus: int
    pushgateway: int
    postgres: int
    scheduler_health: int
    redis: int


DEFAULT_PORTS = {
    "airflow": 8080,
    "prometheus": 9090,
    "pushgateway": 9091,
    "postgres": 5432,
    "scheduler_health": 8974,
    "redis": 6379,
}
"""The ports compose publishes (and PostgreSQL's, Redis' and the scheduler health check's own): used
when free."""
SERVICE_PORTS = {
    ("airflow-apiserver", 8080): "airflow",
    ("prometheus", 9090): "prometheus",
    ("pushgateway", 9091): "pushgateway",
    ("postgres", 5432): "postgres",
    ("redis", 6379): "redis",
}
"""Compose `host:port` addresses -> this stack's port (by Ports field)."""


@dataclass
class Service:
    name: str
    """The compose service it stands for (a Celery worker: airflow-worker-<n>, one replica of
    airflow-worker)."""
    argv: list[str]
    env: dict[str, str]
    ready_url: str | None = None
    cwd: Path = ROOT

    @property
    def compose_service(self) -> str:
        return (
            re.sub(r"-\d+$", "", self.name)
            if self.name.startswith("airflow-worker-")
            else self.name
        )


@dataclass
class Plan:
    state: Path
    ports: Ports
    secrets: dict[str, str]
    airflow_env: dict[str, str]
    init_argv: list[str]
    services: dict[str, Service] = field(default_factory=dict)
    prometheus_config: str = ""
    executor: str = "local"
    """A key of EXECUTORS."""

    @property
    def workers(self) -> list[str]:
        """The Celery workers' service names (none with the LocalExecutor)."""
        return [name for name in self.services if name.startswith("airflow-worker-")]

    @property
    def airflow_url(self) -> str:
        return f"http://{LOOPBACK}:{self.ports.airflow}"

    @property
    def prometheus_url(self) -> str:
        return f"http://{LOOPBACK}:{self.ports.prometheus}"

    @property
    def pushgateway_url(self) -> str:
        return f"http://{LOOPBACK}:{self.ports.pushgateway}"

    @property
    def admin(self) -> tuple[str, str]:
        return self.airflow_env["AIRFLOW_ADMIN_USERNAME"], self.secrets["AIRFLOW_ADMIN_PASSWORD"]

    def postgres_url(self, role: str, password_key: str, database: str) -> str:
        return f"postgresql+psycopg://{role}:{self.secrets[password_key]}@{LOOPBACK}:{self.ports.postgres}/{database}"

    def cli_env(self) -> dict[str, str]:
        """What the `ragwatch` CLI needs to work against this stack (also written to cli.env)."""
        env = {
            k: v
            for k, v in self.airflow_env.items()
            if k.startswith(("RAGWATCH_", "GX_", "DVC_", "RAGAS_")) and k != MARKER
        }
        env[CLI_STACK] = str(self.state)
        env["RAGWATCH_TRACE_STORE_URL"] = self.postgres_url(
            "ragwatch_reader", "TRACES_READER_PASSWORD", "traces"
        )
        env["RAGWATCH_AIRFLOW_API_URL"] = self.airflow_url
        env["RAGWATCH_AIRFLOW_USERNAME"], env["RAGWATCH_AIRFLOW_PASSWORD"] = self.admin
        return env

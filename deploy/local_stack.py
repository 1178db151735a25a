"""`make up` / `make down`: docker-compose.yml's stack on one machine, without Docker.

    python deploy/local_stack.py up [--executor local|celery] [--workers N] [--seed-days N] [--seed-per-day N] [--corpus DIR]
    python deploy/local_stack.py status | down | env

What runs is read from the compose file, not written a second time: every Airflow process gets
the `x-airflow-common` environment (secrets interpolated from a `.env` that `deploy/make-env.sh`
generates, compose host names rewritten to 127.0.0.1 and this stack's ports), the commands of
the compose services (`api-server`, `scheduler`, `dag-processor`, `triggerer`, and
`deploy/airflow/init.sh` for `airflow-init`), PostgreSQL is initialised by
`deploy/postgres/init.sql`, and Prometheus gets `monitoring/prometheus.yml` and its rules with
only the scrape targets rewritten. What cannot be the same on one machine without Docker is
listed in `ONE_MACHINE` with the reason (and in `LOCAL_EXECUTOR`, what the default executor leaves
out), and tests/test_stack.py holds this file to the compose file: a difference that is not listed
fails the test.

Two executors: LocalExecutor (the default: the scheduler runs the tasks) or, with `--executor celery`,
compose's CeleryExecutor with Redis as the broker and N Celery workers (`--workers`, default 2), each
set up as if on a machine of its own: its own RAGWATCH_HOME, temp folder, working directory, Airflow
home and host name. They share only what workers on several machines share: the services (PostgreSQL,
Redis, the api-server, the Pushgateway, and the folders standing in for the Qdrant and MinIO services)
and the data workspace (a shared filesystem mount there, one folder here), plus the task log folder
(see `WORKER_ENV_DOC`). The executor is kept in `executor.json`: a later `up` without `--executor`
brings back the same one, and another one needs a `down` first.

Everything binds to 127.0.0.1; state and logs live under `<RAGWATCH_HOME or .ragwatch>/stack/`.
`up` is idempotent and recovers from a crash (dead processes are restarted, a half-initialised
database is initialised again); `down` stops every process the stack started, including
stragglers found by the `RAGWATCH_STACK` marker in their environment.

This module imports neither Airflow nor `pipelines`: it runs them as processes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from glob import glob
from pathlib import Path

import httpx
import yaml

from pipelines.batching import available_cpus

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
MAKE_ENV = ROOT / "deploy" / "make-env.sh"
INIT_SQL = ROOT / "deploy" / "postgres" / "init.sql"
PROMETHEUS_CONFIG = ROOT / "monitoring" / "prometheus.yml"
DAGS = ROOT / "dags"
BIN = Path(sys.executable).parent
LOOPBACK = "127.0.0.1"
MARKER = "RAGWATCH_STACK"
"""Every process of a stack carries MARKER=<its state dir> in its environment: `down` finds them by it."""
INSTALL_HINT = ("run `make up` (scripts/system-deps.sh installs Debian's postgresql, prometheus, prometheus-pushgateway, "
                "redis-server)")
EXECUTORS = {"local": "LocalExecutor", "celery": "CeleryExecutor"}
DEFAULT_WORKERS = 2
AIRFLOW_ORDER = ("airflow-apiserver", "airflow-scheduler", "airflow-dag-processor", "airflow-triggerer")

# --- What differs from docker-compose.yml on one machine, and why ---------------------------------------------

ONE_MACHINE = {
    "services": {
        "qdrant": "Qdrant local mode under RAGWATCH_HOME (no Qdrant server package in Debian or PyPI)",
        "vllm-generator": "no GPU: the offline deterministic backend, labelled as such in every output",
        "vllm-judge": "no GPU: the offline deterministic backend, labelled as such in every output",
        "vllm-embeddings": "no GPU: the local all-MiniLM-L6-v2 model shipped on PyPI",
        "grafana": "not packaged by Debian; its dashboard's queries are run against this Prometheus by the tests",
        "minio": "the DVC remote is a local directory under RAGWATCH_HOME",
        "minio-init": "the DVC remote is a local directory under RAGWATCH_HOME",
    },
    "env_replaced": {
        "AIRFLOW__CORE__AUTH_MANAGER": (
            "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager",
            "the FAB provider is not in the pinned dependency set; the same AIRFLOW_ADMIN_USERNAME / "
            "AIRFLOW_ADMIN_PASSWORD log in, kept in step by deploy/airflow/init.sh",
        ),
        # {state}: the stack's state folder.
        "RAGWATCH_DVC_REMOTE": ("{state}/dvc-remote", "a folder standing in for MinIO's bucket: every task pushes there"),
    },
    "env_dropped": {
        "RAGWATCH_QDRANT_URL": "Qdrant local mode",
        "RAGWATCH_QDRANT_API_KEY": "Qdrant local mode",
        "RAGWATCH_LLM_BACKEND": "the offline backend (the default) instead of vLLM",
        "RAGWATCH_GENERATOR__BASE_URL": "no vLLM", "RAGWATCH_GENERATOR__MODEL": "no vLLM",
        "RAGWATCH_GENERATOR__API_KEY": "no vLLM",
        "RAGWATCH_JUDGE__BASE_URL": "no vLLM", "RAGWATCH_JUDGE__MODEL": "no vLLM", "RAGWATCH_JUDGE__API_KEY": "no vLLM",
        "RAGWATCH_EMBEDDINGS_BACKEND": "local embeddings (the default) instead of vLLM",
        "RAGWATCH_EMBEDDINGS__BASE_URL": "no vLLM", "RAGWATCH_EMBEDDINGS__MODEL": "no vLLM",
        "RAGWATCH_EMBEDDINGS__API_KEY": "no vLLM",
        "AWS_ACCESS_KEY_ID": "no MinIO", "AWS_SECRET_ACCESS_KEY": "no MinIO", "AWS_ENDPOINT_URL_S3": "no MinIO",
        "AWS_DEFAULT_REGION": "no MinIO",
    },  # fmt: skip
    "args_added": {
        # They would start Airflow's log server, which binds every interface (0.0.0.0:8793/8794, no
        # setting narrows it); the api-server reads task logs from the folder it shares with them.
        "airflow-scheduler": ["--skip-serve-logs"],
        "airflow-triggerer": ["--skip-serve-logs"],
        "airflow-worker": ["--skip-serve-logs"],  # and `--celery-hostname worker-N@host`: see WORKER_ENV_DOC
    },
    "commands_replaced": {
        "redis": "redis-server reads its password, address and data folder from a 0600 config file "
                 "(<state>/redis.conf), not from the command line that `ps` shows",
    },
}
"""Read by tests/test_stack.py: any other difference from the compose file fails it."""

LOCAL_EXECUTOR = {
    "services": {
        "airflow-worker": "LocalExecutor: the scheduler runs the tasks itself (`--executor celery` runs workers)",
        "redis": "the Celery broker; LocalExecutor needs none",
    },
    "env_replaced": {"AIRFLOW__CORE__EXECUTOR": ("LocalExecutor", "the default on one machine (`--executor celery`: compose's)")},
    "env_dropped": {"AIRFLOW__CELERY__RESULT_BACKEND": "no Celery", "AIRFLOW__CELERY__BROKER_URL": "no Celery"},
}
"""What the default executor leaves out on top of ONE_MACHINE; with `--executor celery`, compose's Celery runs."""


def differences(executor: str) -> dict[str, dict]:
    """ONE_MACHINE, plus LOCAL_EXECUTOR's entries for the LocalExecutor."""
    found = {key: dict(value) for key, value in ONE_MACHINE.items()}
    if executor == "local":
        for key, value in LOCAL_EXECUTOR.items():
            found[key].update(value)
    return found

# Settings a container gets from its image or its network that a process here must be given.
AIRFLOW_LOCAL_ENV_DOC = {
    "AIRFLOW_HOME": "the image's /opt/airflow",
    "AIRFLOW__CORE__DAGS_FOLDER": "the image copies dags/ to /opt/airflow/dags; here the checkout's",
    "AIRFLOW__CORE__PLUGINS_FOLDER": "the image copies plugins/; here the checkout's",
    "AIRFLOW__LOGGING__BASE_LOG_FOLDER": "volume airflow-logs",
    "AIRFLOW__LOGGING__COLORED_CONSOLE_LOG": "logs go to files",
    "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "the simple auth manager's admin (AIRFLOW_ADMIN_USERNAME)",
    "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": "written by deploy/airflow/init.sh from AIRFLOW_ADMIN_PASSWORD",
    "AIRFLOW__API__HOST": "bind 127.0.0.1 (the container binds inside its own network)",
    "AIRFLOW__API__PORT": "this stack's port (8080 when free, as compose publishes it)",
    "AIRFLOW__API__BASE_URL": "links and login redirects point at this address",
    "AIRFLOW__API__WORKERS": "one api-server worker per two cores",
    "AIRFLOW__CORE__PARALLELISM": "task processes at a time: the LLM pool's slots plus the machine's cores",
    "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "re-parse every 2 min, not 30 s: the cores belong to tasks",
    "AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_SERVER_HOST": "bind 127.0.0.1",
    "AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_SERVER_PORT": "this stack's port (8974 when free)",
    "RAGWATCH_QDRANT_PATH": "Qdrant local mode (no Qdrant server here) in one folder, <state>/qdrant-data, the "
                            "qdrant service's volume: every process opens it in turn",
    "PYTHONPATH": "the image installs ragwatch; here the checkout is imported",
    "PATH": "the virtualenv's airflow, dvc and git",
    MARKER: "how `down` recognises this stack's processes",
}

WORKER_ENV_DOC = {
    "RAGWATCH_HOME": "<state>/workers/<name>/home: each worker's own (LLM cache, local files), as on its own machine",
    "TMPDIR": "<state>/workers/<name>/tmp: each worker's own temp folder",
    "AIRFLOW_HOME": "<state>/workers/<name>/airflow: each worker's own; its working directory is <state>/workers/<name>",
    "AIRFLOW__CORE__HOSTNAME_CALLABLE": "the host name a task instance records: each container has its own; here the "
                                        "workers share one machine's, so each names itself (deploy/airflow/worker_hostname.py)",
    "RAGWATCH_STACK_WORKER": "the name that callable returns: airflow-worker-<n>",
    "AIRFLOW__CELERY__WORKER_CONCURRENCY": "task processes per worker: the executor's slots (LLM pool + cores) "
                                           "shared out between the workers (at least two each)",
}
"""Set per Celery worker on top of the Airflow environment, with the reason. Shared with every other Airflow
process, as on several machines: the services, the data workspace (RAGWATCH_WORKSPACE: a shared filesystem
mount there), the folders standing in for the Qdrant and MinIO services, and the task log folder (compose's
airflow-logs volume: the workers skip Airflow's log server, which binds every interface)."""


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


DEFAULT_PORTS = {"airflow": 8080, "prometheus": 9090, "pushgateway": 9091, "postgres": 5432, "scheduler_health": 8974,
                 "redis": 6379}  # fmt: skip
"""The ports compose publishes (and PostgreSQL's, Redis' and the scheduler health check's own): used when free."""
SERVICE_PORTS = {("airflow-apiserver", 8080): "airflow", ("prometheus", 9090): "prometheus",
                 ("pushgateway", 9091): "pushgateway", ("postgres", 5432): "postgres", ("redis", 6379): "redis"}  # fmt: skip
"""Compose `host:port` addresses -> this stack's port (by Ports field)."""


@dataclass
class Service:
    name: str
    """The compose service it stands for (a Celery worker: airflow-worker-<n>, one replica of airflow-worker)."""
    argv: list[str]
    env: dict[str, str]
    ready_url: str | None = None
    cwd: Path = ROOT

    @property
    def compose_service(self) -> str:
        return re.sub(r"-\d+$", "", self.name) if self.name.startswith("airflow-worker-") else self.name


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
        env = {k: v for k, v in self.airflow_env.items() if k.startswith(("RAGWATCH_", "GX_", "DVC_", "RAGAS_"))}
        env["RAGWATCH_TRACE_STORE_URL"] = self.postgres_url("ragwatch_reader", "TRACES_READER_PASSWORD", "traces")
        env["RAGWATCH_AIRFLOW_API_URL"] = self.airflow_url
        env["RAGWATCH_AIRFLOW_USERNAME"], env["RAGWATCH_AIRFLOW_PASSWORD"] = self.admin
        return env


# --- Reading the compose file and the Dockerfile ----------------------------------------------------------------

_VARIABLE = re.compile(r"\$(?:(?P<dollar>\$)|\{(?P<braced>[^}]*)\}|(?P<plain>[A-Za-z_][A-Za-z0-9_]*))")
_BRACED = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>.*))?$", re.DOTALL)


def interpolate(value: str, variables: dict[str, str]) -> str:
    """Compose's variable interpolation: $VAR, ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?error}, $$."""

    def substitute(match: re.Match) -> str:
        if match.group("dollar"):
            return "$"
        if match.group("plain"):
            return variables.get(match.group("plain"), "")
        parsed = _BRACED.match(match.group("braced"))
        if parsed is None:
            raise ValueError(f"invalid interpolation {match.group(0)!r}")
        name, op, arg = parsed.group("name"), parsed.group("op"), parsed.group("arg") or ""
        present = name in variables
        empty = not variables.get(name)
        if op in (":-", "-"):
            return arg if (empty if op == ":-" else not present) else variables[name]
        if op in (":?", "?"):
            if empty if op == ":?" else not present:
                raise ValueError(f"{name}: {arg}")
        return variables.get(name, "")

    return _VARIABLE.sub(substitute, value)


def compose_file() -> dict:
    return yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))


def dockerfile_paths() -> tuple[dict[str, str], dict[str, str]]:
    """The image's (ENV name -> value) and (path in the image -> path in the checkout, from COPY)."""
    text = DOCKERFILE.read_text(encoding="utf-8").replace("\\\n", " ")
    env: dict[str, str] = {}
    copies: dict[str, str] = {}
    for line in text.splitlines():
        words = shlex.split(line, comments=True)
        if not words:
            continue
        if words[0] == "ENV":
            env.update(w.split("=", 1) for w in words[1:] if "=" in w)
        elif words[0] == "COPY":
            paths = [w for w in words[1:] if not w.startswith("--")]
            if len(paths) == 2 and paths[1].startswith("/"):
                copies[paths[1]] = str(ROOT / paths[0])
    return env, copies


def mounts(service: dict, state: Path) -> dict[str, str]:
    """A compose service's volumes as (path in the container -> path here): bind mounts are files of
    the checkout, named volumes are folders under the stack's state dir."""
    found = {}
    for volume in service.get("volumes", []):
        source, target = volume.split(":")[:2]
        found[target] = str(ROOT / source) if source.startswith(".") else str(state / source)
    return found



def parallelism(airflow_env: dict[str, str]) -> int:
    """Task slots: every LLM pool slot, plus one per core for the rest.

    A judge or generation batch mostly waits on the model server; with slots = cores alone, two
    batches on 2 cores held every slot and a 2-second push waited minutes behind them. Sized this
    way the `ragwatch_llm` pool can never fill the executor, so push, validate and version tasks
    always find a slot.
    """
    llm_slots = int(airflow_env.get("RAGWATCH_LLM_POOL_SLOTS") or 4)
    return llm_slots + max(2, available_cpus())

def translate_path(word: str, paths: dict[str, str]) -> str:
    """Rewrite a container path (alone or after `--flag=`) to its local counterpart, longest prefix first."""
    flag, eq, value = word.partition("=") if word.startswith("--") else ("", "", word)
    for inside in sorted(paths, key=len, reverse=True):
        if value == inside or value.startswith(inside.rstrip("/") + "/"):
            value = paths[inside] + value[len(inside.rstrip("/")):] if value != inside else paths[inside]
            break
    return f"{flag}{eq}{value}"


def rewrite_addresses(key: str, value: str, ports: Ports, known_services: set[str]) -> str:
    """Compose host names -> 127.0.0.1 and this stack's ports; a compose host this stack does not run is an error."""
    if key.startswith("AIRFLOW_CONN_") and value.lstrip().startswith("{"):
        conn = json.loads(value)
        if (conn.get("host"), int(conn.get("port") or 0)) in SERVICE_PORTS:
            conn["port"] = getattr(ports, SERVICE_PORTS[(conn["host"], int(conn["port"]))])
            conn["host"] = LOOPBACK
        elif conn.get("host") in known_services:
            raise ValueError(f"{key} points at compose service {conn['host']!r}, which this stack does not run")
        return json.dumps(conn)

    def replace(match: re.Match) -> str:
        host, port = match.group("host"), int(match.group("port"))
        if (host, port) in SERVICE_PORTS:
            return f"{LOOPBACK}:{getattr(ports, SERVICE_PORTS[(host, port)])}"
        if host in known_services:
            raise ValueError(f"{key} points at compose service {host!r}, which this stack does not run")
        return match.group(0)

    return re.sub(r"(?<=[/@])(?P<host>[A-Za-z][A-Za-z0-9-]*):(?P<port>\d+)(?!\w)", replace, value)


def derived_prometheus_config(ports: Ports, interval: str | None = None) -> str:
    """monitoring/prometheus.yml with the scrape targets pointed at this stack and the rule files made absolute;
    with `interval`, the scrape and evaluation intervals too (the demo's short-lived Prometheus)."""
    config = yaml.safe_load(PROMETHEUS_CONFIG.read_text(encoding="utf-8"))
    if interval:
        config.setdefault("global", {}).update(scrape_interval=interval, evaluation_interval=interval)
    config["rule_files"] = [str((PROMETHEUS_CONFIG.parent / f).resolve()) for f in config.get("rule_files", [])]
    for job in config.get("scrape_configs", []):
        for static in job.get("static_configs", []):
            targets = []
            for target in static["targets"]:
                host, _, port = target.rpartition(":")
                key = ("prometheus", int(port)) if host == "localhost" else (host, int(port))
                if key not in SERVICE_PORTS:
                    raise ValueError(f"{PROMETHEUS_CONFIG}: scrape target {target!r} is not a service this stack runs")
                targets.append(f"{LOOPBACK}:{getattr(ports, SERVICE_PORTS[key])}")
            static["targets"] = targets
    differ = "targets, rule paths and intervals" if interval else "targets and rule paths"
    header = f"# Derived from {PROMETHEUS_CONFIG.relative_to(ROOT)} by deploy/local_stack.py: only {differ} differ.\n"
    return header + yaml.safe_dump(config, sort_keys=False)


# --- The plan: what runs, with which environment ----------------------------------------------------------------


def build_plan(state: Path, ports: Ports, secrets: dict[str, str], executor: str = "local",
               workers: int = DEFAULT_WORKERS) -> Plan:  # fmt: skip
    if executor not in EXECUTORS:
        raise StackError(f"unknown executor {executor!r}: one of {', '.join(EXECUTORS)}")
    compose = compose_file()
    services = compose["services"]
    known = set(services)
    image_env, image_paths = dockerfile_paths()
    differ = differences(executor)

    def service_env(name: str) -> dict[str, str]:
        env = {}
        for key, value in (services[name].get("environment") or {}).items():
            if key in differ["env_dropped"]:
                continue
            if key in differ["env_replaced"]:
                env[key] = differ["env_replaced"][key][0].format(state=state)
                continue
            env[key] = rewrite_addresses(key, interpolate(str(value), secrets), ports, known)
        return env

    airflow_paths = {**image_paths, **mounts(services["airflow-scheduler"], state), "/opt/airflow": str(state / "airflow")}
    airflow_env = service_env("airflow-init")  # the common block plus the admin login and pool size
    airflow_env.update({k: translate_path(v, airflow_paths) for k, v in image_env.items()})
    admin = airflow_env["AIRFLOW_ADMIN_USERNAME"]
    airflow_env.update({
        "AIRFLOW_HOME": str(state / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": translate_path("/opt/airflow/dags", airflow_paths),
        "AIRFLOW__CORE__PLUGINS_FOLDER": translate_path("/opt/airflow/plugins", airflow_paths),
        "AIRFLOW__LOGGING__BASE_LOG_FOLDER": translate_path("/opt/airflow/logs", airflow_paths),
        "AIRFLOW__LOGGING__COLORED_CONSOLE_LOG": "False",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{admin}:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(state / "airflow" / "simple_auth_manager_passwords.json"),
        "AIRFLOW__API__HOST": LOOPBACK,
        "AIRFLOW__API__PORT": str(ports.airflow),
        "AIRFLOW__API__BASE_URL": f"http://{LOOPBACK}:{ports.airflow}",
        "AIRFLOW__API__WORKERS": str(max(1, available_cpus() // 2)),
        "AIRFLOW__CORE__PARALLELISM": str(parallelism(airflow_env)),
        "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "120",
        "AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_SERVER_HOST": LOOPBACK,
        "AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_SERVER_PORT": str(ports.scheduler_health),
        "RAGWATCH_QDRANT_PATH": str(state / "qdrant-data"),
        "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        MARKER: str(state),
    })  # fmt: skip
    # The caller's own Airflow and ragwatch settings (a shell's, a test's) must not leak in.
    airflow_env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "RAGWATCH_"))} | airflow_env
    assert set(AIRFLOW_LOCAL_ENV_DOC) <= airflow_env.keys()

    plan = Plan(state=state, ports=ports, secrets=secrets, airflow_env=airflow_env, init_argv=[], executor=executor)
    plan.init_argv = [translate_path(w, airflow_paths) for w in services["airflow-init"]["command"]]
    health = {
        "airflow-apiserver": f"{plan.airflow_url}/api/v2/version",
        "airflow-scheduler": f"http://{LOOPBACK}:{ports.scheduler_health}/health",
    }
    for name in AIRFLOW_ORDER:
        argv = [str(BIN / "airflow"), *shlex.split(services[name]["command"]), *differ["args_added"].get(name, [])]
        plan.services[name] = Service(name, argv, airflow_env, health.get(name))
    if executor == "celery":
        plan.services.update(celery_services(plan, services, workers))

    plain_env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "RAGWATCH_"))} | {MARKER: str(state)}
    pushgateway = services["pushgateway"]
    plan.services["pushgateway"] = Service(
        "pushgateway",
        [binary("prometheus-pushgateway"), *(translate_path(interpolate(w, secrets), mounts(pushgateway, state))
                                              for w in pushgateway["command"]),
         f"--web.listen-address={LOOPBACK}:{ports.pushgateway}"],
        plain_env, f"{plan.pushgateway_url}/-/healthy",
    )  # fmt: skip
    prometheus = services["prometheus"]
    prometheus_paths = mounts(prometheus, state) | {"/etc/prometheus/prometheus.yml": str(state / "prometheus.yml")}
    plan.services["prometheus"] = Service(
        "prometheus",
        [binary("prometheus"), *(translate_path(interpolate(w, secrets), prometheus_paths) for w in prometheus["command"]),
         f"--web.listen-address={LOOPBACK}:{ports.prometheus}"],
        plain_env, f"{plan.prometheus_url}/-/healthy",
    )  # fmt: skip
    plan.prometheus_config = derived_prometheus_config(ports)
    return plan


def celery_services(plan: Plan, services: dict, workers: int) -> dict[str, Service]:
    """Redis and the Celery workers, each worker set up as on a machine of its own (WORKER_ENV_DOC)."""
    if workers < 1:
        raise StackError(f"--workers {workers}: a Celery stack needs at least one worker")
    found = {"redis": Service("redis", [binary("redis-server"), str(plan.state / "redis.conf")],
                              {**_plain_env(), MARKER: str(plan.state)})}  # fmt: skip
    command = shlex.split(services["airflow-worker"]["command"])
    # Compose's worker adds DUMB_INIT_SETSID=0 only, for the image's init (there is none here): SIGTERM reaches
    # the worker's process group, which Celery takes as a warm shutdown.
    for n in range(1, workers + 1):
        name = f"airflow-worker-{n}"
        folder = plan.state / "workers" / name
        env = plan.airflow_env | {
            "RAGWATCH_HOME": str(folder / "home"),
            "TMPDIR": str(folder / "tmp"),
            "AIRFLOW_HOME": str(folder / "airflow"),
            "AIRFLOW__CORE__HOSTNAME_CALLABLE": "deploy.airflow.worker_hostname.hostname",
            "RAGWATCH_STACK_WORKER": name,
            # The executor's slots, shared out: the LLM pool can never fill them all (see `parallelism`).
            "AIRFLOW__CELERY__WORKER_CONCURRENCY": str(max(2, -(-parallelism(plan.airflow_env) // workers))),
        }  # fmt: skip
        # RAGWATCH_LLM_CACHE_URL comes with plan.airflow_env from compose: one PostgreSQL table for every
        # worker, so a batch retried or backfilled on another worker sends no request twice.
        assert env.get("RAGWATCH_LLM_CACHE_URL", "").startswith("postgresql"), "the workers must share the LLM cache"
        assert set(env) - set(plan.airflow_env) <= set(WORKER_ENV_DOC)
        argv = [str(BIN / "airflow"), *command, *ONE_MACHINE["args_added"]["airflow-worker"],
                "--celery-hostname", f"{name}@{socket.gethostname()}"]  # fmt: skip
        found[name] = Service(name, argv, env, cwd=folder)
    return found


def redis_config(plan: Plan) -> str:
    """redis.conf for the broker: compose's `--requirepass`, plus the loopback address and this stack's port."""
    return (f"# Written by deploy/local_stack.py: the Celery broker of docker-compose.yml's redis service.\n"
            f"bind {LOOPBACK}\nport {plan.ports.redis}\nrequirepass {plan.secrets['REDIS_PASSWORD']}\n"
            f"dir {plan.state / 'redis-data'}\ndaemonize no\nlogfile \"\"\n")  # fmt: skip


def _plain_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "RAGWATCH_"))}


def binary(name: str) -> str:
    return shutil.which(name) or f"/usr/bin/{name}"


def expected_dag_ids() -> list[str]:
    """The DAG ids of dags/*.py, read from the files (the DAGs must show up in the UI under these)."""
    found = []
    for path in sorted(DAGS.glob("*.py")):
        found += re.findall(r"""dag_id\s*=\s*["']([^"']+)["']""", path.read_text(encoding="utf-8"))
    return found


# --- State: ports, secrets, processes ---------------------------------------------------------------------------


def state_dir(home: Path | None = None) -> Path:
    home = home or Path(os.environ.get("RAGWATCH_HOME") or ROOT / ".ragwatch")
    return (home / "stack").resolve()


def port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((LOOPBACK, port))
        except OSError:
            return False
        return True


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def load_ports(state: Path, requested: dict[str, int] | None = None) -> Ports:
    """Ports fixed at the first `up` (compose's when free, else a free one), kept in ports.json."""
    path = state / "ports.json"
    saved = json.loads(path.read_text()) if path.exists() else {}
    if saved and requested and {k: saved.get(k, v) for k, v in requested.items()} != requested:
        raise StackError(f"{path} holds other ports than requested ({saved}); `down`, delete it, then `up` again")
    if saved.keys() >= DEFAULT_PORTS.keys():
        return Ports(**{k: saved[k] for k in DEFAULT_PORTS})
    chosen = dict(saved)  # a stack made before a service was added keeps its ports and gets one for it
    for name, default in ((n, d) for n, d in DEFAULT_PORTS.items() if n not in saved):
        wanted = (requested or {}).get(name) or int(os.environ.get(f"RAGWATCH_STACK_{name.upper()}_PORT", default))
        chosen[name] = wanted if port_free(wanted) or (requested or {}).get(name) else free_port()
        if chosen[name] != wanted:
            print(f"port {wanted} is taken: {name} gets {chosen[name]}")
    path.write_text(json.dumps(chosen, indent=1) + "\n")
    return Ports(**chosen)


def load_secrets(state: Path) -> dict[str, str]:
    """The stack's .env: deploy/make-env.sh's output (every change-me a fresh secret), made once."""
    path = state / ".env"
    if not path.exists():
        made = subprocess.run(["bash", str(MAKE_ENV)], capture_output=True, text=True, check=True).stdout
        tmp = path.with_suffix(".tmp")
        tmp.write_text(made)
        tmp.chmod(0o600)
        tmp.replace(path)
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line and not line.startswith("#"))
    return {k.strip(): v.strip() for k, v in pairs}


def load_executor(state: Path, executor: str | None = None, workers: int | None = None) -> tuple[str, int]:
    """The stack's executor and worker count: the ones asked for, else those of its last `up`, else the
    LocalExecutor. Kept in executor.json; another one than the running stack's needs a `down` first."""
    path = state / "executor.json"
    saved = json.loads(path.read_text()) if path.exists() else {"executor": "local", "workers": DEFAULT_WORKERS}
    wanted = {"executor": executor or saved["executor"], "workers": workers or saved["workers"]}
    if wanted["executor"] not in EXECUTORS:
        raise StackError(f"unknown executor {wanted['executor']!r}: one of {', '.join(EXECUTORS)}")
    if wanted != saved:
        if any(running_pid(state, name) for name in _service_names(state)):
            raise StackError(f"this stack runs {_describe(saved['executor'], saved['workers'])}; `make down` first, "
                             f"then `make up` with {_describe(wanted['executor'], wanted['workers'])}")  # fmt: skip
        path.write_text(json.dumps(wanted) + "\n")
    return wanted["executor"], wanted["workers"]


def _describe(executor: str, workers: int) -> str:
    return f"EXECUTOR=celery WORKERS={workers}" if executor == "celery" else "EXECUTOR=local"


def plan_for(home: Path | None = None, ports: dict[str, int] | None = None, executor: str | None = None,
             workers: int | None = None) -> Plan:  # fmt: skip
    state = state_dir(home)
    state.mkdir(parents=True, exist_ok=True)
    chosen, count = load_executor(state, executor, workers)
    return build_plan(state, load_ports(state, ports), load_secrets(state), chosen, count)


def _start_time(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]  # field 22: start time in clock ticks since boot


def _pidfile(state: Path, name: str) -> Path:
    return state / "run" / f"{name}.pid"


def running_pid(state: Path, name: str) -> int | None:
    path = _pidfile(state, name)
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if _start_time(saved["pid"]) == saved["start"] and not _zombie(saved["pid"]):
        return saved["pid"]
    return None


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)  # the group `start` created for exactly this process
    except (ProcessLookupError, PermissionError):
        pass


def _ours(saved: dict) -> bool:
    """Whether the session/group a pid file names is still this stack's: its leader runs with the
    recorded start time, or no process has that pid (Linux never reuses a pid that is still some
    live process's session or group id, so the ones found under it are the leader's orphans)."""
    start = _start_time(saved["pid"])
    return start is None or start == saved["start"]


def _saved(path: Path) -> dict | None:
    try:
        saved = json.loads(path.read_text())
        return saved if {"pid", "start"} <= saved.keys() else None
    except (OSError, ValueError):
        return None


def start(plan: Plan, service: Service) -> int:
    saved = _pidfile(plan.state, service.name)
    old = _saved(saved)
    if old and _ours(old):  # a crashed leader may have left its group behind (workers holding the port)
        _signal_group(old["pid"], signal.SIGKILL)
    logs = plan.state / "logs"
    with open(logs / f"{service.name}.log", "ab") as log:
        log.write(f"\n=== {datetime.now(timezone.utc).isoformat()} {shlex.join(service.argv)}\n".encode())
        log.flush()
        proc = subprocess.Popen(service.argv, cwd=service.cwd, env=service.env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    saved.write_text(json.dumps({"pid": proc.pid, "start": _start_time(proc.pid), "argv": service.argv}))
    return proc.pid


def _session_id(stat: str) -> int:
    return int(stat.rsplit(")", 1)[1].split()[3])  # field 6: the session id


def stack_processes(state: Path) -> list[tuple[int, str]]:
    """Every live process of this stack (pid, command line): the members of the sessions `start`
    created, and whatever carries the stack's marker in its environment (PostgreSQL, setup
    commands). Both are needed: Airflow's processes retitle themselves (setproctitle), which
    overwrites the environment that /proc shows."""
    wanted = f"{MARKER}={state}".encode()
    sessions = {s["pid"] for p in (state / "run").glob("*.pid") if (s := _saved(p)) and _ours(s)}
    mine = {os.getpid(), os.getppid()}
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in mine:
            continue
        try:
            member = _session_id((entry / "stat").read_text()) in sessions
            if (member or wanted in (entry / "environ").read_bytes().split(b"\0")) and not _zombie(int(entry.name)):
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
                found.append((int(entry.name), cmdline))
        except OSError:
            continue
    return found


# --- PostgreSQL: a cluster of our own, initialised by deploy/postgres/init.sql -----------------------------------


def _pg_bin() -> Path:
    found = sorted(glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if not found:
        raise StackError(f"PostgreSQL server binaries not found; {INSTALL_HINT}")
    return Path(found[-1]).parent


def _as_postgres(cmd: list[str]) -> list[str]:
    # PostgreSQL refuses to run as root; runuser keeps the environment (init.sql's \getenv reads it).
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


def _run(cmd: list[str], log: Path, env: dict[str, str] | None = None, stdin: str | None = None, timeout: float = 600):
    with open(log, "ab") as out:
        out.write(f"\n=== {datetime.now(timezone.utc).isoformat()} {shlex.join(cmd)}\n".encode())
        out.flush()
        result = subprocess.run(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=timeout,
                                input=stdin.encode() if stdin is not None else None,
                                stdin=None if stdin is not None else subprocess.DEVNULL)  # fmt: skip
    if result.returncode != 0:
        tail = log.read_text(errors="replace")[-3000:]
        raise StackError(f"`{shlex.join(cmd)}` failed ({result.returncode}); log {log}:\n{tail}")


def postgres_pid(state: Path) -> int | None:
    """The postmaster of this stack's cluster, if it runs (a zombie or a reused pid does not count)."""
    data = state / "postgres-data"
    try:
        pid = int((data / "postmaster.pid").read_text().split()[0])
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except (OSError, ValueError, IndexError):
        return None
    return pid if str(data) in cmdline and not _zombie(pid) else None


def ensure_postgres(plan: Plan) -> None:
    pg_bin = _pg_bin()
    data, sockets, log = plan.state / "postgres-data", plan.state / "postgres-run", plan.state / "logs" / "postgres.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "RAGWATCH_"))} | {MARKER: str(plan.state)}
    done = data / "ragwatch-initialised"
    if not done.exists():
        # docker-entrypoint-initdb.d runs init.sql once, on an empty volume: a cluster whose init did
        # not finish (a crash midway) holds nothing yet, so it is made again from scratch.
        if postgres_pid(plan.state):
            _run(_as_postgres([str(pg_bin / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]), log, env)
        shutil.rmtree(data, ignore_errors=True)
        for path in (data, sockets):
            path.mkdir(parents=True, exist_ok=True)
            if os.geteuid() == 0:
                shutil.chown(path, "postgres", "postgres")
        data.chmod(0o700)
        check = subprocess.run(_as_postgres(["test", "-w", str(data)]), capture_output=True)
        if check.returncode != 0:
            raise StackError(f"user postgres cannot write {data}: every folder above it must be searchable (o+x)")
        _run(_as_postgres([str(pg_bin / "initdb"), "-D", str(data), "-U", "postgres", "--auth-local=trust",
                           "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8"]), log, env)  # fmt: skip
    if postgres_pid(plan.state) is None:
        # No postmaster of this cluster runs: lock files left by a crash are stale. PostgreSQL would
        # refuse to start while their pid still exists, which a not yet reaped zombie's does.
        for stale in [data / "postmaster.pid", *sockets.glob(".s.PGSQL.*")]:
            stale.unlink(missing_ok=True)
        server_log = plan.state / "logs" / "postgres-server.log"
        server_log.touch()
        if os.geteuid() == 0:  # the server writes it as postgres
            shutil.chown(server_log, "postgres", "postgres")
        _run(_as_postgres([str(pg_bin / "pg_ctl"), "-D", str(data), "-l", str(server_log),
                           "-w", "-t", "120", "-o",
                           f"-p {plan.ports.postgres} -k {sockets} -c listen_addresses={LOOPBACK}", "start"]), log, env)  # fmt: skip
    if not done.exists():
        passwords = {k: plan.secrets[k] for k in ("AIRFLOW_DB_PASSWORD", "RESULTS_DB_PASSWORD", "TRACES_READER_PASSWORD",
                                                  "TRACES_WRITER_PASSWORD")}  # fmt: skip
        _run(_as_postgres([str(pg_bin / "psql"), "-h", str(sockets), "-p", str(plan.ports.postgres), "-U", "postgres",
                           "-d", "postgres", "--no-psqlrc", "-v", "ON_ERROR_STOP=1", "-q", "-f", "-"]),
             log, env | passwords, stdin=INIT_SQL.read_text())  # fmt: skip
        done.write_text(datetime.now(timezone.utc).isoformat() + "\n")


def stop_postgres(state: Path) -> None:
    data = state / "postgres-data"
    if postgres_pid(state):
        subprocess.run(_as_postgres([str(_pg_bin() / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "-t", "60", "stop"]),
                       capture_output=True)  # fmt: skip


# --- Airflow through its REST API --------------------------------------------------------------------------------


class Airflow:
    def __init__(self, plan: Plan):
        self.plan = plan
        self.token: str | None = None

    def login(self) -> str | None:
        user, password = self.plan.admin
        try:
            response = httpx.post(f"{self.plan.airflow_url}/auth/token", json={"username": user, "password": password},
                                  timeout=10)  # fmt: skip
        except httpx.HTTPError:
            return None
        if response.status_code == 201:
            self.token = response.json()["access_token"]
        return self.token

    def api(self, method: str, path: str, **kwargs) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.token}"}
        return httpx.request(method, f"{self.plan.airflow_url}{path}", headers=headers, timeout=30, **kwargs)


def wait_until(what: str, probe, timeout: float, plan: Plan, interval: float = 2.0):
    deadline = time.monotonic() + timeout
    while True:
        dead = [name for name in plan.services if running_pid(plan.state, name) is None]
        if dead:
            logs = "\n".join(_tail(plan.state / "logs" / f"{name}.log") for name in dead)
            raise StackError(f"{', '.join(dead)} exited while waiting for {what}\n{logs}")
        result = probe()
        if result:
            return result
        if time.monotonic() > deadline:
            raise StackError(f"gave up after {timeout:.0f} s waiting for {what}; logs under {plan.state / 'logs'}")
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
    return all((health.get(part) or {}).get("status") == "healthy"
               for part in ("metadatabase", "scheduler", "triggerer", "dag_processor"))  # fmt: skip


def _parsed(airflow: Airflow, dag_ids: list[str]) -> bool:
    try:
        errors = airflow.api("GET", "/api/v2/importErrors").json()
    except httpx.HTTPError:
        return False
    if errors.get("total_entries"):
        raise StackError("DAG import errors:\n" + "\n".join(e["stack_trace"][-2000:] for e in errors["import_errors"]))
    return all(airflow.api("GET", f"/api/v2/dags/{dag_id}").status_code == 200 for dag_id in dag_ids)


def _first_run(airflow: Airflow, dag_id: str, timeout: float) -> None:
    """Unpause `dag_id` and wait for one successful run: the scheduled one its timetable makes due
    at once, else a manual one (so the first golden set is not built twice)."""
    dag = airflow.api("GET", f"/api/v2/dags/{dag_id}").json()
    due = dag.get("next_dagrun_run_after")
    response = airflow.api("PATCH", f"/api/v2/dags/{dag_id}", json={"is_paused": False})
    if response.status_code != 200:
        raise StackError(f"could not unpause {dag_id}: {response.status_code} {response.text}")
    if due and datetime.fromisoformat(due.replace("Z", "+00:00")) <= datetime.now(timezone.utc):
        run_id = wait_until(f"the scheduler to create {dag_id}'s scheduled run", lambda: next(
            (r["dag_run_id"] for r in airflow.api("GET", f"/api/v2/dags/{dag_id}/dagRuns").json()["dag_runs"]), None),
            120, airflow.plan)  # fmt: skip
    else:
        response = airflow.api("POST", f"/api/v2/dags/{dag_id}/dagRuns", json={"logical_date": None})
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
        if progress != last["shown"] and time.monotonic() - last["at"] > 20:  # a line when it changes, at most every 20 s
            print(f"  {datetime.now(timezone.utc):%H:%M:%S} {dag_id}: {progress}", flush=True)
            last.update(shown=progress, at=time.monotonic())
        return state if state in ("success", "failed") else None

    state = wait_until(f"{dag_id} run {run_id}", finished, timeout, airflow.plan, interval=5)
    if state != "success":
        logs = airflow.plan.airflow_env["AIRFLOW__LOGGING__BASE_LOG_FOLDER"]
        raise StackError(f"{dag_id} run {run_id} {state}: task logs under {logs}/dag_id={dag_id}/run_id={run_id}")


def task_progress(airflow: Airflow, dag_id: str, run_id: str) -> str:
    """One line of a run's task states, in the DAG's order: `plan ✓ · generate 2/4 (1 running) · filter_candidates …`."""
    try:
        tis = airflow.api("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances", params={"limit": 1000}).json()
    except (httpx.HTTPError, ValueError):
        return "(task states not available)"
    tasks: dict[str, list[str | None]] = {}
    for ti in sorted(tis.get("task_instances", []), key=lambda t: (t.get("start_date") or "~", t["map_index"])):
        tasks.setdefault(ti["task_id"], []).append(ti["state"])
    parts = []
    for task_id, states in tasks.items():
        done, running = states.count("success"), sum(s in ("running", "queued", "scheduled") for s in states)
        failed = sum(s in ("failed", "up_for_retry", "upstream_failed") for s in states)
        mark = "✓" if done == len(states) else f"{done}/{len(states)}" if len(states) > 1 else "…"
        parts.append(f"{task_id} {mark}" + (f" ({running} running)" if running and len(states) > 1 else "")
                     + (f" ({failed} failed or retrying)" if failed else ""))  # fmt: skip
    return " · ".join(parts) or "waiting for the scheduler"


def still_running(airflow: Airflow, dag_ids: list[str]) -> list[str]:
    """The runs not finished yet, e.g. `trace_sampling scheduled__2026-12-01T00:00:00+00:00 (running)`."""
    found = []
    for dag_id in dag_ids:
        try:
            runs = airflow.api("GET", f"/api/v2/dags/{dag_id}/dagRuns", params={"state": ["queued", "running"]}).json()
        except (httpx.HTTPError, ValueError):
            continue
        found += [f"{dag_id} {r['dag_run_id']} ({r['state']})" for r in runs.get("dag_runs", [])]
    return found


# --- up / down / status ------------------------------------------------------------------------------------------

def up(home: Path | None = None, *, ports: dict[str, int] | None = None, seed_days: int | None = None,
       seed_per_day: int | None = None, corpus: Path | None = None, timeout: float = 1800,
       executor: str | None = None, workers: int | None = None) -> Plan:  # fmt: skip
    plan = plan_for(home, ports, executor, workers)
    for name in ("prometheus", "prometheus-pushgateway", "promtool", *(["redis-server"] if plan.workers else [])):
        if shutil.which(name) is None:
            raise StackError(f"{name} not found; {INSTALL_HINT}")
    for sub in ("logs", "run", "bootstrap", "airflow", "pushgateway-data", "prometheus-data", "redis-data"):
        (plan.state / sub).mkdir(parents=True, exist_ok=True)
    for name in plan.workers:
        for sub in ("home", "tmp", "airflow"):
            (plan.state / "workers" / name / sub).mkdir(parents=True, exist_ok=True)
    _move_shared_folders(plan)
    logs = plan.state / "logs"
    if not (plan.state / "bootstrap" / "golden").exists():
        print("first start: seeds demo traffic, indexes the corpus and builds a first golden set; about 3 minutes on "
              "a 2-core machine (a later `make up` takes about a minute)", flush=True)  # fmt: skip
    print(f"ragwatch stack: {EXECUTORS[plan.executor]}" + (f" with {len(plan.workers)} Celery workers" if plan.workers else "")
          + f"; state and logs under {plan.state}")  # fmt: skip

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
    writer_env = plan.airflow_env | {"RAGWATCH_TRACE_STORE_URL": plan.postgres_url("traces_writer", "TRACES_WRITER_PASSWORD", "traces")}
    seed_args = [*(["--days", str(seed_days)] if seed_days else []), *(["--per-day", str(seed_per_day)] if seed_per_day else [])]
    for step, argv, env in (("seed", [*cli, "demo", "seed", *seed_args], writer_env),
                            ("corpus-index", [*cli, "corpus", "index", *([str(corpus)] if corpus else [])], plan.airflow_env)):  # fmt: skip
        if not (bootstrap / step).exists():
            log = open(logs / f"{step}.log", "ab")
            setup[step] = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                           stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
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
    """A stack made before the Qdrant and DVC remote folders moved out of its RAGWATCH_HOME keeps them."""
    home = Path(plan.airflow_env["RAGWATCH_HOME"])
    for old, new in ((home / "qdrant", plan.airflow_env["RAGWATCH_QDRANT_PATH"]),
                     (home / "dvc-remote", plan.airflow_env["RAGWATCH_DVC_REMOTE"])):  # fmt: skip
        if old.is_dir() and not Path(new).exists():
            old.rename(new)


def _start_airflow(plan: Plan, setup: dict[str, subprocess.Popen], timeout: float) -> None:
    logs, bootstrap = plan.state / "logs", plan.state / "bootstrap"
    first_start = not (bootstrap / "golden").exists()
    deadline = time.monotonic() + 60
    while plan.workers and not _redis_ready(plan):  # the scheduler and the workers connect to the broker at start
        if running_pid(plan.state, "redis") is None or time.monotonic() > deadline:
            raise StackError(f"redis did not answer\n{_tail(logs / 'redis.log')}")
        time.sleep(0.3)
    missing = [name for name in (*AIRFLOW_ORDER, *plan.workers) if running_pid(plan.state, name) is None]
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
    for name in ("pushgateway", "prometheus"):
        wait_until(f"{name} to be healthy", lambda n=name: _ok(plan.services[n].ready_url), 120, plan)
    wait_until("the api-server to log the admin in", airflow.login, 300, plan)
    wait_until("scheduler, triggerer and dag-processor to report healthy", lambda: _healthy(airflow), 300, plan)
    for name in plan.workers:
        wait_until(f"Celery worker {name} to be ready", lambda n=name: _worker_ready(plan, n), 300, plan)
    dag_ids = expected_dag_ids()
    wait_until(f"the dag-processor to parse {dag_ids}", lambda: _parsed(airflow, dag_ids), 300, plan)

    for step, proc in setup.items():
        if proc.wait(timeout=timeout) != 0:
            raise StackError(f"first start: {step} failed\n{_tail(logs / f'{step}.log')}")
        (bootstrap / step).write_text(datetime.now(timezone.utc).isoformat() + "\n")
    if not (bootstrap / "golden").exists() and "golden_build" in dag_ids:
        # offline_eval needs a published golden set: build the first one before its schedule runs.
        print("first start: a golden_build run, so that offline_eval has a golden set (under a minute with the offline "
              "model on 2 cores; its tasks' states below)", flush=True)  # fmt: skip
        _first_run(airflow, "golden_build", timeout)
        (bootstrap / "golden").write_text(datetime.now(timezone.utc).isoformat() + "\n")

    for dag_id in dag_ids:
        response = airflow.api("PATCH", f"/api/v2/dags/{dag_id}", json={"is_paused": False})
        if response.status_code != 200:
            raise StackError(f"could not unpause {dag_id}: {response.status_code} {response.text}")

    cli_env = plan.state / "cli.env"
    cli_env.write_text("".join(f"{k}={shlex.quote(v)}\n" for k, v in sorted(plan.cli_env().items())))
    cli_env.chmod(0o600)
    user, password = plan.admin
    running = ("\n" + " " * 25).join(still_running(airflow, dag_ids)) or (
        "nothing yet: the scheduler starts the due runs (yesterday's trace_sampling, then online_eval) within a minute"
        if first_start else "no run")
    print(f"""
ragwatch stack is up; everything listens on {LOOPBACK} only.
  Airflow UI, REST API   {plan.airflow_url}   user {user}, password {password}
                         (AIRFLOW_ADMIN_PASSWORD in {plan.state / '.env'})
  ragwatch page          {plan.airflow_url}/ragwatch/
  Prometheus (alerts)    {alerts_page(plan)}
  Pushgateway            {plan.pushgateway_url}
  DAGs unpaused          {', '.join(dag_ids)}
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
    return (f", {len(plan.workers)} Celery workers ({', '.join(plan.workers)}; each with its own RAGWATCH_HOME, TMPDIR "
            f"and working directory under {plan.state / 'workers'}), broker Redis on {LOOPBACK}:{plan.ports.redis}\n"
            f"                         shared: the data workspace {first['RAGWATCH_WORKSPACE']}")  # fmt: skip


def alerts_page(plan: Plan) -> str:
    """Prometheus' alerts page: `/alerts` from 3.0 on (compose's image), `/classic/alerts` on the 2.x Debian
    installs, whose `/alerts` is a 404 without the new web UI."""
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
    """Celery logs `<node> ready.` once it consumes from the broker (checked since the worker's last start)."""
    log = plan.state / "logs" / f"{name}.log"
    text = log.read_text(errors="replace") if log.exists() else ""
    return f"{name}@" in text and " ready." in text.rsplit("\n=== ", 1)[-1]


def _service_names(state: Path) -> list[str]:
    """The services `down` stops, in order: the Celery workers a pid file names, Airflow, then the rest."""
    workers = sorted(p.stem for p in (state / "run").glob("airflow-worker-*.pid"))
    return [*workers, *reversed(AIRFLOW_ORDER), "redis", "prometheus", "pushgateway"]


def down(home: Path | None = None, timeout: float = 30) -> list[tuple[int, str]]:
    """Stop everything; return what was still running afterwards (nothing, normally)."""
    state = state_dir(home)
    _stop_services(state, _service_names(state), timeout)
    stop_postgres(state)
    for pid, _ in stack_processes(state):  # stragglers that left their group (or a crashed leader's)
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


# --- Monitoring only: the Pushgateway and Prometheus of `make demo` ------------------------------------------------

MONITORING = ("pushgateway", "prometheus")
DEMO_INTERVAL = "5s"
"""The demo's Prometheus scrapes and evaluates every 5 s (30 s in prometheus.yml) so that an alert a run
triggers is evaluated within the demo; the rules themselves are the project's, unchanged."""


def monitoring_up(home: Path, interval: str | None = DEMO_INTERVAL, timeout: float = 60) -> dict[str, str]:
    """Start this stack's Pushgateway and (when its binary exists) Prometheus alone, fresh: the same
    service definitions as `up`, state under `<home>/stack`, ports chosen anew (compose's when free).
    Returns the variables that point ragwatch at them (RAGWATCH_PUSHGATEWAY_URL, RAGWATCH_PROMETHEUS_URL)."""
    if shutil.which("prometheus-pushgateway") is None:
        raise StackError(f"prometheus-pushgateway not found; {INSTALL_HINT}")
    monitoring_down(home)
    state = state_dir(home)
    for sub in ("pushgateway-data", "prometheus-data"):  # a fresh start: nothing from the last demo
        shutil.rmtree(state / sub, ignore_errors=True)
    (state / "ports.json").unlink(missing_ok=True)
    plan = plan_for(home)
    for sub in ("logs", "run", "pushgateway-data", "prometheus-data"):
        (plan.state / sub).mkdir(parents=True, exist_ok=True)
    names = [n for n in MONITORING if n == "pushgateway" or shutil.which(n)]
    if "prometheus" in names:
        (plan.state / "prometheus.yml").write_text(derived_prometheus_config(plan.ports, interval))
    for name in names:
        start(plan, plan.services[name])
    deadline = time.monotonic() + timeout
    for name in names:
        while not _ok(plan.services[name].ready_url):
            if running_pid(plan.state, name) is None or time.monotonic() > deadline:
                monitoring_down(home)
                raise StackError(f"{name} did not become healthy\n{_tail(plan.state / 'logs' / f'{name}.log')}")
            time.sleep(0.2)
    found = {"RAGWATCH_PUSHGATEWAY_URL": plan.pushgateway_url}
    if "prometheus" in names:
        found["RAGWATCH_PROMETHEUS_URL"] = plan.prometheus_url
    return found


def monitoring_down(home: Path, timeout: float = 15) -> None:
    """Stop what `monitoring_up` started (by the pid files it wrote, nothing else)."""
    state = state_dir(home)
    for name in _stop_services(state, MONITORING, timeout):
        _pidfile(state, name).unlink(missing_ok=True)


def _stop_services(state: Path, names, timeout: float) -> list[str]:
    """SIGTERM each running service's process group, wait up to `timeout`, then SIGKILL whatever of a
    group outlived its leader; returns the services that were running."""
    pids = {name: pid for name in names if (pid := running_pid(state, name))}
    for pid in pids.values():
        _signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(running_pid(state, n) for n in pids):
        time.sleep(0.2)
    for name in pids:
        if (saved := _saved(_pidfile(state, name))) and _ours(saved):
            _signal_group(saved["pid"], signal.SIGKILL)
    return list(pids)


def status(home: Path | None = None) -> dict[str, int | None]:
    state = state_dir(home)
    executor, workers = load_executor(state)
    celery = ["redis", *(f"airflow-worker-{n}" for n in range(1, workers + 1))] if executor == "celery" else []
    found = {name: running_pid(state, name) for name in ("pushgateway", "prometheus", *AIRFLOW_ORDER, *celery)}
    found["postgres"] = postgres_pid(state)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="deploy/local_stack.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    up_parser = sub.add_parser("up", help="start (or repair) the stack; first start seeds, indexes, builds gold")
    up_parser.add_argument("--executor", choices=list(EXECUTORS),
                           help="local: the LocalExecutor (default for a new stack); celery: Redis and Celery workers "
                                "(default: the stack's last one)")  # fmt: skip
    up_parser.add_argument("--workers", type=int, help=f"Celery workers (default {DEFAULT_WORKERS}, or the stack's last count)")
    up_parser.add_argument("--seed-days", type=int, help="first start: days of demo traffic (default: the demo's)")
    up_parser.add_argument("--seed-per-day", type=int, help="first start: demo traces per day")
    up_parser.add_argument("--corpus", type=Path, help="first start: folder to index (default: the demo corpus)")
    sub.add_parser("down", help="stop every process of the stack")
    sub.add_parser("status", help="which processes run")
    sub.add_parser("env", help="print the variables that point the ragwatch CLI at the stack")
    for name, text in (("monitoring-up", "start only a fresh Pushgateway and Prometheus (make demo); print their URLs"),
                       ("monitoring-down", "stop what monitoring-up started")):  # fmt: skip
        sub.add_parser(name, help=text).add_argument("--home", type=Path, required=True, help="their state: <home>/stack")
    args = parser.parse_args(argv)
    if args.command == "monitoring-up":
        try:
            found = monitoring_up(args.home)
        except StackError as failed:
            print(failed, file=sys.stderr)
            return 1
        for key, value in found.items():
            print(f"export {key}={shlex.quote(value)}")
        return 0
    if args.command == "monitoring-down":
        monitoring_down(args.home)
        return 0
    if args.command == "up":
        try:
            up(seed_days=args.seed_days, seed_per_day=args.seed_per_day, corpus=args.corpus, executor=args.executor,
               workers=args.workers)  # fmt: skip
        except StackError as failed:
            print(f"{failed}\n`make up` again retries what failed; `make down` stops what has started.", file=sys.stderr)
            return 1
    elif args.command == "down":
        return 1 if down() else 0
    elif args.command == "status":
        found = status()
        for name, pid in found.items():
            print(f"{name:24} {'pid ' + str(pid) if pid else 'not running'}")
        return 0 if all(found.values()) else 3
    elif args.command == "env":
        for key, value in sorted(plan_for().cli_env().items()):
            print(f"export {key}={shlex.quote(value)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

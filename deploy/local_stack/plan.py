"""The plan: what runs, with which environment, read from the compose file."""

from __future__ import annotations

import ast
import os
import shlex
import shutil
import socket
from pathlib import Path

from deploy.local_stack.compose import (
    compose_file,
    derived_prometheus_config,
    dockerfile_paths,
    interpolate,
    mounts,
    parallelism,
    rewrite_addresses,
    translate_path,
)
from deploy.local_stack.differences import (
    AIRFLOW_LOCAL_ENV_DOC,
    ONE_MACHINE,
    WORKER_ENV_DOC,
    differences,
)
from deploy.local_stack.layout import (
    AIRFLOW_ORDER,
    BIN,
    DAGS,
    DEFAULT_WORKERS,
    EXECUTORS,
    LOOPBACK,
    MARKER,
    ROOT,
)
from deploy.local_stack.model import Plan, Ports, Service, StackError
from pipelines.core.batching import available_cpus


def build_plan(
    state: Path,
    ports: Ports,
    secrets: dict[str, str],
    executor: str = "local",
    workers: int = DEFAULT_WORKERS,
) -> Plan:
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

    airflow_paths = {
        **image_paths,
        **mounts(services["airflow-scheduler"], state),
        "/opt/airflow": str(state / "airflow"),
    }
    airflow_env = service_env("airflow-init")  # the common block plus the admin login and pool size
    airflow_env.update({k: translate_path(v, airflow_paths) for k, v in image_env.items()})
    admin = airflow_env["AIRFLOW_ADMIN_USERNAME"]
    airflow_env.update(
        {
            "AIRFLOW_HOME": str(state / "airflow"),
            "AIRFLOW__CORE__DAGS_FOLDER": translate_path("/opt/airflow/dags", airflow_paths),
            "AIRFLOW__CORE__PLUGINS_FOLDER": translate_path("/opt/airflow/plugins", airflow_paths),
            "AIRFLOW__LOGGING__BASE_LOG_FOLDER": translate_path("/opt/airflow/logs", airflow_paths),
            "AIRFLOW__LOGGING__COLORED_CONSOLE_LOG": "False",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{admin}:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(
                state / "airflow" / "simple_auth_manager_passwords.json"
            ),
            "AIRFLOW__API__HOST": LOOPBACK,
            "AIRFLOW__API__PORT": str(ports.airflow),
            "AIRFLOW__API__BASE_URL": f"http://{LOOPBACK}:{ports.airflow}",
            "AIRFLOW__API__WORKERS": str(max(1, available_cpus() // 2)),
            "AIRFLOW__CORE__PARALLELISM": str(parallelism(airflow_env)),
            "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "120",
            "AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_SERVER_HOST": LOOPBACK,
            "AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_SERVER_PORT": str(ports.scheduler_health),
            "RAGWATCH_QDRANT_PATH": str(state / "qdrant-data"),
            "PYTHONPATH": os.pathsep.join(
                [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
            ),
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
            MARKER: str(state),
        }
    )
    # The caller's own Airflow and ragwatch settings (a shell's, a test's) must not leak in.
    airflow_env = {
        k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "RAGWATCH_"))
    } | airflow_env
    assert set(AIRFLOW_LOCAL_ENV_DOC) <= airflow_env.keys()

    plan = Plan(
        state=state,
        ports=ports,
        secrets=secrets,
        airflow_env=airflow_env,
        init_argv=[],
        executor=executor,
    )
    plan.init_argv = [translate_path(w, airflow_paths) for w in services["airflow-init"]["command"]]
    health = {
        "airflow-apiserver": f"{plan.airflow_url}/api/v2/version",
        "airflow-scheduler": f"http://{LOOPBACK}:{ports.scheduler_health}/health",
    }
    for name in AIRFLOW_ORDER:
        argv = [
            str(BIN / "airflow"),
            *shlex.split(services[name]["command"]),
            *differ["args_added"].get(name, []),
        ]
        plan.services[name] = Service(name, argv, airflow_env, health.get(name))
    if executor == "celery":
        plan.services.update(celery_services(plan, services, workers))

    plain_env = {
        k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "RAGWATCH_"))
    } | {MARKER: str(state)}
    pushgateway = services["pushgateway"]
    plan.services["pushgateway"] = Service(
        "pushgateway",
        [
            binary("prometheus-pushgateway"),
            *(
                translate_path(interpolate(w, secrets), mounts(pushgateway, state))
                for w in pushgateway["command"]
            ),
            f"--web.listen-address={LOOPBACK}:{ports.pushgateway}",
        ],
        plain_env,
        f"{plan.pushgateway_url}/-/healthy",
    )
    prometheus = services["prometheus"]
    prometheus_paths = mounts(prometheus, state) | {
        "/etc/prometheus/prometheus.yml": str(state / "prometheus.yml")
    }
    plan.services["prometheus"] = Service(
        "prometheus",
        [
            binary("prometheus"),
            *(
                translate_path(interpolate(w, secrets), prometheus_paths)
                for w in prometheus["command"]
            ),
            f"--web.listen-address={LOOPBACK}:{ports.prometheus}",
        ],
        plain_env,
        f"{plan.prometheus_url}/-/healthy",
    )
    plan.prometheus_config = derived_prometheus_config(ports)
    return plan


def celery_services(plan: Plan, services: dict, workers: int) -> dict[str, Service]:
    """Redis and the Celery workers, each worker set up as on a machine of its own
    (WORKER_ENV_DOC)."""
    if workers < 1:
        raise StackError(f"--workers {workers}: a Celery stack needs at least one worker")
    found = {
        "redis": Service(
            "redis",
            [binary("redis-server"), str(plan.state / "redis.conf")],
            {**_plain_env(), MARKER: str(plan.state)},
        )
    }
    command = shlex.split(services["airflow-worker"]["command"])
    # Compose's worker adds DUMB_INIT_SETSID=0 only, for the image's init (there is none here):
    # SIGTERM reaches the worker's process group, which Celery takes as a warm shutdown.
    for n in range(1, workers + 1):
        name = f"airflow-worker-{n}"
        folder = plan.state / "workers" / name
        env = plan.airflow_env | {
            "RAGWATCH_HOME": str(folder / "home"),
            "TMPDIR": str(folder / "tmp"),
            "AIRFLOW_HOME": str(folder / "airflow"),
            "AIRFLOW__CORE__HOSTNAME_CALLABLE": "deploy.airflow.worker_hostname.hostname",
            "RAGWATCH_STACK_WORKER": name,
            # The executor's slots, shared out: the LLM pool can never fill them all (see
            # `parallelism`).
            "AIRFLOW__CELERY__WORKER_CONCURRENCY": str(
                max(2, -(-parallelism(plan.airflow_env) // workers))
            ),
        }
        # RAGWATCH_LLM_CACHE_URL comes with plan.airflow_env from compose: one PostgreSQL table for
        # every worker, so a batch retried or backfilled on another worker sends no request twice.
        assert env.get("RAGWATCH_LLM_CACHE_URL", "").startswith("postgresql"), (
            "the workers must share the LLM cache"
        )
        assert set(env) - set(plan.airflow_env) <= set(WORKER_ENV_DOC)
        argv = [
            str(BIN / "airflow"),
            *command,
            *ONE_MACHINE["args_added"]["airflow-worker"],
            "--celery-hostname",
            f"{name}@{socket.gethostname()}",
        ]
        found[name] = Service(name, argv, env, cwd=folder)
    return found


def redis_config(plan: Plan) -> str:
    """redis.conf for the broker: compose's `--requirepass`, plus the loopback address and this
    stack's port."""
    return (
        f"# Written by deploy/local_stack: the Celery broker of docker-compose.yml's redis service.\n"
        f"bind {LOOPBACK}\nport {plan.ports.redis}\nrequirepass {plan.secrets['REDIS_PASSWORD']}\n"
        f'dir {plan.state / "redis-data"}\ndaemonize no\nlogfile ""\n'
    )


def _plain_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "RAGWATCH_"))}


def binary(name: str) -> str:
    return shutil.which(name) or f"/usr/bin/{name}"


DAG_FACTORIES = {"DAG", "dag", "ragwatch_dag", "daily_dag"}
"""What a DAG file calls with its id: Airflow's own, or plugins/ragwatch_airflow/dag_parts.py's
wrappers."""


def expected_dag_ids() -> list[str]:
    """The DAG ids of dags/*.py, read from the files (the DAGs must show up in the UI under
    these)."""
    found = []
    for path in sorted(DAGS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in DAG_FACTORIES:
                named = [k.value for k in node.keywords if k.arg == "dag_id"]
                first = named[0] if named else (node.args[0] if node.args else None)
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    found.append(first.value)
    return found

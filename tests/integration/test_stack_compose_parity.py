"""What `make up` runs is what docker-compose.yml declares (no stack needed): commands, env names
and ports inside, with every difference listed in `local_stack.ONE_MACHINE`.
"""

from __future__ import annotations

import json
import shlex
import socket
from pathlib import Path

import pytest
import yaml

from deploy import local_stack as ls
from tests.support.stack import ROOT

COMPOSE_SERVICES_RUN_HERE = {
    "postgres",
    "airflow-init",
    "pushgateway",
    "prometheus",
    "airflow-apiserver",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
}
CELERY_SERVICES = {"redis", "airflow-worker"}
"""Run only with `--executor celery`."""


# --- 1. The compose stack stays honest ------------------------------------------------------------


def example_secrets() -> dict[str, str]:
    pairs = (
        l.split("=", 1)
        for l in (ROOT / ".env.example").read_text().splitlines()
        if "=" in l and l[0] != "#"
    )
    return {k: (f"secret-of-{k.lower()}" if v.startswith("change-me") else v) for k, v in pairs}


def declared(command) -> list[str]:
    return shlex.split(command) if isinstance(command, str) else list(command)


@pytest.mark.stack
@pytest.mark.parametrize("executor", ["local", "celery"])
def test_make_up_runs_what_the_compose_file_declares(tmp_path, executor):
    services = ls.compose_file()["services"]
    secrets = example_secrets()
    ports = ls.Ports(
        airflow=18080,
        prometheus=19090,
        pushgateway=19091,
        postgres=15432,
        scheduler_health=18974,
        redis=16379,
    )
    plan = ls.build_plan(tmp_path / "stack", ports, secrets, executor, 2)
    differ = ls.differences(executor)
    added = differ["args_added"]

    # Every compose service runs here, or is listed with the reason it cannot (the LocalExecutor:
    # two more).
    running_here = COMPOSE_SERVICES_RUN_HERE | (CELERY_SERVICES if executor == "celery" else set())
    assert {s.compose_service for s in plan.services.values()} | {
        "postgres",
        "airflow-init",
    } == running_here
    assert running_here.isdisjoint(differ["services"])
    assert set(services) == running_here | set(differ["services"])
    assert plan.workers == (
        ["airflow-worker-1", "airflow-worker-2"] if executor == "celery" else []
    )

    # Same commands: Airflow's word for word (plus the listed flags; a worker names itself), the
    # monitoring binaries with the same flags (their paths are the volumes' folders here) plus the
    # address they bind.
    for name, service in plan.services.items():
        compose_name = service.compose_service
        if name in plan.workers:
            assert service.argv == [
                str(ls.BIN / "airflow"),
                *declared(services[compose_name]["command"]),
                *added[compose_name],
                "--celery-hostname",
                f"{name}@{socket.gethostname()}",
            ]
        elif name.startswith("airflow-"):
            assert service.argv == [
                str(ls.BIN / "airflow"),
                *declared(services[name]["command"]),
                *added.get(name, []),
            ]
        elif name in differ["commands_replaced"]:  # redis: its settings in a config file
            assert name == "redis" and service.argv[1:] == [str(plan.state / "redis.conf")]
            config = ls.redis_config(plan).splitlines()
            assert (
                f"requirepass {secrets['REDIS_PASSWORD']}" in config and "bind 127.0.0.1" in config
            )
            assert f"port {ports.redis}" in config
        else:
            flags = [word.split("=", 1)[0] for word in service.argv[1:]]
            assert flags == [w.split("=", 1)[0] for w in declared(services[name]["command"])] + [
                "--web.listen-address"
            ]
            assert service.argv[-1] == f"--web.listen-address=127.0.0.1:{getattr(ports, name)}"
    assert set(added) <= COMPOSE_SERVICES_RUN_HERE | CELERY_SERVICES

    # Each worker as on a machine of its own: its own home, temp folder, working directory and host
    # name; the rest of its environment is every Airflow process's.
    worker_folders = set()
    for name in plan.workers:
        service = plan.services[name]
        env = service.env
        assert {k: v for k, v in env.items() if k not in ls.WORKER_ENV_DOC} == {
            k: v for k, v in plan.airflow_env.items() if k not in ls.WORKER_ENV_DOC
        }
        own = [
            Path(env["RAGWATCH_HOME"]),
            Path(env["TMPDIR"]),
            Path(env["AIRFLOW_HOME"]),
            service.cwd,
        ]
        assert all(path.is_relative_to(plan.state / "workers" / name) for path in own)
        worker_folders.update(own)
        assert (
            env["RAGWATCH_STACK_WORKER"] == name
            and int(env["AIRFLOW__CELERY__WORKER_CONCURRENCY"]) >= 1
        )
    assert len(worker_folders) == 4 * len(plan.workers)
    assert declared(services["airflow-init"]["command"]) == [
        "bash",
        "/opt/ragwatch/airflow-init.sh",
    ]
    assert plan.init_argv == [
        "bash",
        str(ROOT / "deploy" / "airflow" / "init.sh"),
    ]  # the Dockerfile's COPY source

    # Same environment names and values: compose's, interpolated, with its host names pointing here.
    env = {k: str(v) for k, v in services["airflow-init"]["environment"].items()}
    common = {k: str(v) for k, v in ls.compose_file()["x-airflow-common"]["environment"].items()}
    assert common.items() <= env.items()
    dropped, replaced = differ["env_dropped"], differ["env_replaced"]
    assert dropped.keys() | replaced.keys() <= env.keys(), (
        "ONE_MACHINE names a variable compose no longer sets"
    )
    back = {
        f"127.0.0.1:{getattr(ports, field)}": f"{host}:{inside}"
        for (host, inside), field in ls.SERVICE_PORTS.items()
    }
    for key, value in env.items():
        if key in dropped:
            assert key not in plan.airflow_env, key
        elif key in replaced:
            assert plan.airflow_env[key] == replaced[key][0].format(state=plan.state), key
        elif key.startswith("AIRFLOW_CONN_"):
            local, compose = (
                json.loads(plan.airflow_env[key]),
                json.loads(ls.interpolate(value, secrets)),
            )
            local_address = back[f"{local.pop('host')}:{local.pop('port')}"]
            assert (
                local_address == f"{compose.pop('host')}:{compose.pop('port')}" and local == compose
            ), key
        else:
            local = plan.airflow_env[key]
            for here, there in back.items():
                local = local.replace(here, there)
            assert local == ls.interpolate(value, secrets), key
    image_env, _ = ls.dockerfile_paths()
    ours = {
        k
        for k in plan.airflow_env
        if k.startswith(("AIRFLOW", "RAGWATCH_")) or k in ls.AIRFLOW_LOCAL_ENV_DOC
    }
    assert ours - env.keys() <= set(ls.AIRFLOW_LOCAL_ENV_DOC) | set(image_env)
    for key in image_env:  # the image's settings, with its paths turned into this stack's folders
        assert plan.airflow_env[key] == image_env[key] or plan.airflow_env[key].startswith(
            str(tmp_path)
        ), key

    # Same ports inside: what compose publishes is what `make up` binds when the port is free.
    for (host, inside), field in ls.SERVICE_PORTS.items():
        assert ls.DEFAULT_PORTS[field] == inside
        for mapping in services[host].get("ports", []):
            assert ls.interpolate(mapping, {}).split(":")[-2:] == [str(inside)] * 2, mapping
    assert ls.DEFAULT_PORTS["scheduler_health"] == 8974  # the compose healthcheck's port

    # monitoring/prometheus.yml, with only the scrape targets and the rule paths changed.
    original = yaml.safe_load((ROOT / "monitoring" / "prometheus.yml").read_text())
    derived = yaml.safe_load(plan.prometheus_config)
    assert [Path(f).name for f in derived.pop("rule_files")] == [
        Path(f).name for f in original.pop("rule_files")
    ]
    for config in (original, derived):
        for job in config["scrape_configs"]:
            for static in job["static_configs"]:
                static["targets"] = len(static["targets"])
    assert derived == original

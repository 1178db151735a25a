"""docker-compose.yml, .env.example, the Dockerfile and deploy/: the production-like stack.

`docker-compose config` (Debian's `docker-compose` package, installed by scripts/system-deps.sh)
validates and interpolates the file as Compose itself does; the rest reads the YAML and checks
what `config` cannot: every documented service exists, long-running services have
healthchecks, start order uses conditions, no secret is written in the file, the judge is not
the generator. The PostgreSQL init script runs for real against a throwaway cluster.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import sqlalchemy as sa
import yaml

from pipelines.core.settings import ModelEndpoint, Settings
from pipelines.models.shared_cache import SharedLLMCache
from tests.support.services import start_postgres

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
ENV_EXAMPLE = ROOT / ".env.example"
DEPLOY_README = ROOT / "deploy" / "README.md"
INIT_SQL = ROOT / "deploy" / "postgres" / "init.sql"
INSTALL_HINT = (
    "docker-compose not found: run `make test` (scripts/system-deps.sh installs Debian's "
    "`docker-compose` package) or `apt-get install -y docker-compose`"
)

AIRFLOW_SERVICES = {
    "airflow-init",
    "airflow-apiserver",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
    "airflow-worker",
}
REQUIRED_SERVICES = AIRFLOW_SERVICES | {
    "postgres",
    "redis",
    "qdrant",
    "vllm-generator",
    "vllm-judge",
    "vllm-embeddings",
    "pushgateway",
    "prometheus",
    "grafana",
    "minio",
    "minio-init",
}
ONE_SHOT = {"airflow-init", "minio-init"}
SECRET_KEY = re.compile(
    r"PASSWORD|SECRET|TOKEN|API_KEY|FERNET|ANONYMIZER_KEY|ACCESS_KEY|REDISCLI_AUTH"
)


def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))


def services() -> dict[str, dict]:
    return compose()["services"]


def env_keys(path: Path) -> dict[str, str]:
    pairs = (
        line.split("=", 1)
        for line in path.read_text().splitlines()
        if line and not line.startswith("#")
    )
    return {key: value for key, value in pairs}


def docker_compose(*args: str, env_file: Path) -> subprocess.CompletedProcess:
    binary = shutil.which("docker-compose")
    if binary is None:
        pytest.fail(INSTALL_HINT)
    # Variables from the caller's shell would win over the env file and hide a missing one.
    env = {k: v for k, v in os.environ.items() if k not in env_keys(ENV_EXAMPLE)}
    return subprocess.run(
        [binary, "-f", str(COMPOSE), "--env-file", str(env_file), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def resolved(env_file: Path = ENV_EXAMPLE) -> dict:
    result = docker_compose("config", env_file=env_file)
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)


# --- Compose itself --------------------------------------------------------------------------


def test_compose_file_is_valid_with_the_example_env():
    config = resolved()
    assert REQUIRED_SERVICES <= set(config["services"])


def test_compose_refuses_to_start_without_secrets(tmp_path):
    empty = tmp_path / "empty.env"
    empty.write_text("")
    result = docker_compose("config", env_file=empty)
    assert result.returncode != 0
    assert "in .env" in result.stderr  # the ${VAR:?set VAR in .env} message names what is missing


def test_make_env_replaces_every_placeholder(tmp_path):
    out = subprocess.run(
        [str(ROOT / "deploy" / "make-env.sh")], capture_output=True, text=True, check=True
    ).stdout
    generated = tmp_path / ".env"
    generated.write_text(out)
    values = env_keys(generated)
    assert set(values) == set(env_keys(ENV_EXAMPLE))
    assert not [k for k, v in values.items() if "change-me" in v]
    assert len(base64.urlsafe_b64decode(values["AIRFLOW_FERNET_KEY"])) == 32
    secrets = [v for k, v in values.items() if env_keys(ENV_EXAMPLE)[k] == "change-me"]
    assert len(set(secrets)) == len(secrets), "every secret is drawn separately"
    postgres = resolved(generated)["services"]["postgres"]
    assert postgres["environment"]["POSTGRES_PASSWORD"] == values["POSTGRES_PASSWORD"]


def test_env_file_is_git_ignored():
    # The stack reads its secrets from ./.env: it must never be committed.
    result = subprocess.run(["git", "check-ignore", "-q", ".env"], cwd=ROOT, check=False)
    assert result.returncode == 0, "add `.env` to .gitignore"


# --- Structure -----------------------------------------------------------------------------


def documented_services() -> set[str]:
    text = DEPLOY_README.read_text(encoding="utf-8")
    section = text.split("## Services", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([a-z0-9-]+)` \|", section, flags=re.MULTILINE))


def test_every_documented_service_exists_and_every_service_is_documented():
    assert documented_services() == set(services())
    assert REQUIRED_SERVICES <= set(services())


def test_long_running_services_have_healthchecks():
    for name, service in services().items():
        if name in ONE_SHOT:
            assert service["restart"] == "no", name
            continue
        assert service.get("restart") in {"always", "unless-stopped"}, name
        test = service.get("healthcheck", {}).get("test")
        assert test and test[0] in {"CMD", "CMD-SHELL"}, f"{name} has no healthcheck"


def test_start_order_uses_conditions_on_existing_services():
    all_services = services()
    for name, service in all_services.items():
        depends = service.get("depends_on", {})
        assert isinstance(depends, dict), f"{name}: depends_on needs conditions, not a list"
        for target, spec in depends.items():
            assert target in all_services, (name, target)
            if target in ONE_SHOT:
                assert spec == {"condition": "service_completed_successfully"}, (name, target)
            else:
                assert spec == {"condition": "service_healthy"}, (name, target)
                assert "healthcheck" in all_services[target], (name, target)
    for name in AIRFLOW_SERVICES - {"airflow-init"}:
        assert (
            all_services[name]["depends_on"]["airflow-init"]["condition"]
            == "service_completed_successfully"
        )


def test_volumes_are_declared_and_bind_mounts_exist():
    declared = set(compose()["volumes"])
    used = set()
    for name, service in services().items():
        for mount in service.get("volumes", []):
            source = mount.split(":", 1)[0]
            if source.startswith("./"):
                assert (ROOT / source).exists(), (name, source)
            else:
                used.add(source)
    assert used == declared


def literal_secrets(value: str) -> list[str]:
    """Credentials written in a value instead of coming from ${VAR}."""
    found = [pw for pw in re.findall(r"://[^:/@\s]*:([^@\s]*)@", value) if not pw.startswith("${")]
    found += [pw for pw in re.findall(r'"password":\s*"([^"]*)"', value) if not pw.startswith("${")]
    return found


def test_no_literal_secrets():
    for name, service in services().items():
        env = service.get("environment", {})
        assert isinstance(env, dict), name
        for key, value in env.items():
            value = str(value)
            if SECRET_KEY.search(key):
                assert value.startswith("${") and value.endswith("}"), (
                    f"{name}: {key} must come from .env"
                )
            assert literal_secrets(value) == [], f"{name}: {key} holds a credential"
        command = service.get("command", [])
        text = " ".join(command) if isinstance(command, list) else str(command)
        assert not re.search(r"--(api-key|password)[= ]", text), (
            f"{name}: a secret on the command line"
        )
    text = COMPOSE.read_text(encoding="utf-8")
    assert "change-me" not in text


def test_every_required_variable_is_in_the_example_env():
    text = re.sub(r"^\s*#.*$", "", COMPOSE.read_text(encoding="utf-8"), flags=re.MULTILINE)
    required = set(re.findall(r"\$\{([A-Z0-9_]+):\?", text))
    optional = set(re.findall(r"\$\{([A-Z0-9_]+):-", text))
    example = env_keys(ENV_EXAMPLE)
    assert required - set(example) == set()
    assert set(example) - required - optional == set(), (
        "variables in .env.example that compose never reads"
    )
    placeholders = {k for k, v in example.items() if v == "change-me"}
    # An access key id is a user name, not a secret: it keeps a readable default.
    secrets = {k for k in required if SECRET_KEY.search(k) and not k.endswith("_ACCESS_KEY")}
    assert placeholders == secrets, "each secret, and only a secret, is a change-me placeholder"


def test_generator_and_judge_are_different_models_on_gpus():
    config = resolved()["services"]
    models = {}
    for name in ("vllm-generator", "vllm-judge", "vllm-embeddings"):
        service = config[name]
        assert service["image"].startswith("vllm/vllm-openai:"), name
        models[name] = service["command"][0]
        (device,) = service["deploy"]["resources"]["reservations"]["devices"]
        assert device["driver"] == "nvidia" and device["capabilities"] == ["gpu"], name
        assert "VLLM_API_KEY" in service["environment"], name
    assert models["vllm-generator"] != models["vllm-judge"], (
        "the judge must not grade its own generator"
    )
    assert "--runner=pooling" in config["vllm-embeddings"]["command"]
    env = config["airflow-worker"]["environment"]
    assert env["RAGWATCH_GENERATOR__MODEL"] == models["vllm-generator"]
    assert env["RAGWATCH_JUDGE__MODEL"] == models["vllm-judge"]
    assert env["RAGWATCH_EMBEDDINGS__MODEL"] == models["vllm-embeddings"]


def test_airflow_is_wired_for_ragwatch():
    config = resolved()["services"]
    env = config["airflow-worker"]["environment"]
    assert env["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor"
    conn = json.loads(env["AIRFLOW_CONN_RAGWATCH_TRACE_STORE"])
    assert (conn["conn_type"], conn["login"], conn["schema"]) == (
        "postgres",
        "ragwatch_reader",
        "traces",
    )
    assert conn["extra"]["table"] == "traces"
    # Workers on several machines share one LLM cache: the results database, through the results
    # role.
    assert env["RAGWATCH_LLM_CACHE_URL"].startswith("postgresql+psycopg://ragwatch:")
    assert env["RAGWATCH_LLM_CACHE_URL"].endswith("@postgres:5432/ragwatch_results")
    # Every RAGWATCH_* variable names a real setting (a typo would be silently ignored).
    for key in (k for k in env if k.startswith("RAGWATCH_")):
        field, _, nested = key.removeprefix("RAGWATCH_").lower().partition("__")
        assert field in Settings.model_fields, key
        if nested:
            assert nested in ModelEndpoint.model_fields, key
    # Every Airflow component sees the same settings (the worker adds only its shutdown mode).
    common = {k: v for k, v in env.items() if k != "DUMB_INIT_SETSID"}
    for name in AIRFLOW_SERVICES:
        assert common.items() <= config[name]["environment"].items(), name


def test_airflow_init_creates_the_plugins_pools():
    plugin = (ROOT / "plugins" / "ragwatch_airflow" / "settings.py").read_text()
    dvc_pool = re.search(r'DVC_POOL = "([^"]+)"', plugin).group(1)
    llm_pool = re.search(r'LLM_POOL = "([^"]+)"', plugin).group(1)
    conn_id = re.search(r'TRACE_STORE_CONN_ID = "([^"]+)"', plugin).group(1)
    init = (ROOT / "deploy" / "airflow" / "init.sh").read_text()
    assert f"airflow pools set {dvc_pool} 1 " in init
    assert f'airflow pools set {llm_pool} "${{RAGWATCH_LLM_POOL_SLOTS:-4}}"' in init
    assert f"AIRFLOW_CONN_{conn_id.upper()}" in COMPOSE.read_text()
    assert resolved()["services"]["airflow-init"]["command"] == [
        "bash",
        "/opt/ragwatch/airflow-init.sh",
    ]
    assert (
        subprocess.run(
            ["bash", "-n", str(ROOT / "deploy" / "airflow" / "init.sh")], check=False
        ).returncode
        == 0
    )


def test_monitoring_mounts_match_the_provisioning():
    config = services()
    assert (
        "./monitoring/prometheus.yml:/etc/prometheus/prometheus.yml:ro"
        in config["prometheus"]["volumes"]
    )
    assert "./monitoring/rules:/etc/prometheus/rules:ro" in config["prometheus"]["volumes"]
    provider = yaml.safe_load(
        (ROOT / "monitoring/grafana/provisioning/dashboards/ragwatch.yml").read_text()
    )
    path = provider["providers"][0]["options"]["path"]
    assert f"./monitoring/grafana/dashboards:{path}:ro" in config["grafana"]["volumes"]
    assert (
        "./monitoring/grafana/provisioning:/etc/grafana/provisioning:ro"
        in config["grafana"]["volumes"]
    )
    assert "--persistence.file=/pushgateway/pushgateway.db" in config["pushgateway"]["command"]


def test_image_extends_the_pinned_airflow():
    dockerfile = (ROOT / "Dockerfile").read_text()
    pinned = re.search(
        r"^apache-airflow==(\S+)$", (ROOT / "constraints.txt").read_text(), flags=re.MULTILINE
    ).group(1)
    assert f"ARG AIRFLOW_VERSION={pinned}\n" in dockerfile
    assert "FROM apache/airflow:${AIRFLOW_VERSION}-python3.11" in dockerfile
    assert "-c constraints.txt" in dockerfile and "pip check" in dockerfile
    for source in ("dags", "plugins", "pipelines", "deploy/airflow/init.sh"):
        assert (
            f" {source} " in dockerfile
            or f" {source}\n" in dockerfile
            or f" ./{source}" in dockerfile
        )
    assert ".env" in (ROOT / ".dockerignore").read_text().split()


# --- The PostgreSQL init script, for real ---------------------------------------------------------

PASSWORDS = {
    "AIRFLOW_DB_PASSWORD": "af-pw",
    "RESULTS_DB_PASSWORD": "res-pw",
    "TRACES_READER_PASSWORD": "reader-pw",
    "TRACES_WRITER_PASSWORD": "writer-pw",
}


@pytest.fixture(scope="module")
def initialised_cluster():
    """A throwaway cluster with init.sql applied, as the postgres image does on its first start."""
    pg = start_postgres()
    try:
        yield pg, run_init_sql(pg, PASSWORDS)
    finally:
        pg.stop()


def run_init_sql(pg, passwords: dict[str, str]) -> subprocess.CompletedProcess:
    env = {
        k: v for k, v in os.environ.items() if k not in PASSWORDS
    } | passwords  # \getenv reads them
    return subprocess.run(
        pg.cluster.psql("-f", "-"),
        input=INIT_SQL.read_text(),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def connect(pg, user: str, database: str) -> sa.Engine:
    password = {
        "airflow": "af-pw",
        "ragwatch": "res-pw",
        "ragwatch_reader": "reader-pw",
        "traces_writer": "writer-pw",
    }[user]
    return sa.create_engine(pg.url(user, password, database))


@pytest.mark.services
def test_init_sql_creates_the_databases_and_a_read_only_trace_reader(initialised_cluster):
    pg, result = initialised_cluster
    assert result.returncode == 0, result.stderr

    writer = connect(pg, "traces_writer", "traces")
    with writer.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO traces (trace_id, ts, question, answer, app, language) "
                "VALUES ('t1', now(), 'q', 'a', 'docs', 'es')"
            )
        )
    writer.dispose()

    reader = connect(pg, "ragwatch_reader", "traces")
    with reader.connect() as conn:
        assert conn.execute(sa.text("SELECT trace_id FROM traces")).scalars().all() == ["t1"]
        assert conn.execute(sa.text("SHOW default_transaction_read_only")).scalar_one() == "on"
        assert conn.execute(sa.text("SHOW statement_timeout")).scalar_one() == "1min"
    for statement in (
        "INSERT INTO traces (trace_id) VALUES ('t2')",
        "CREATE TABLE stolen (x int)",
        "SELECT * FROM pg_catalog.pg_authid",
    ):
        with reader.connect() as conn, pytest.raises(sa.exc.DBAPIError):
            conn.execute(sa.text(statement))
    reader.dispose()

    # Each role reaches its own database only.
    for user, database in (
        ("ragwatch_reader", "ragwatch_results"),
        ("ragwatch_reader", "airflow"),
        ("ragwatch", "airflow"),
        ("airflow", "traces"),
    ):
        engine = connect(pg, user, database)
        with pytest.raises(sa.exc.OperationalError, match="permission denied"):
            engine.connect().close()
        engine.dispose()
    for user, database in (("ragwatch", "ragwatch_results"), ("airflow", "airflow")):
        engine = connect(pg, user, database)
        with engine.begin() as conn:
            conn.execute(sa.text("CREATE TABLE owned_here (x int)"))
        engine.dispose()
    # The LLM cache compose points the workers at: the results role creates its table and uses it.
    cache = SharedLLMCache(pg.url("ragwatch", "res-pw", "ragwatch_results"))
    cache.put("k", {"value": 1})
    assert cache.get("k") == {"value": 1}


@pytest.mark.services
def test_init_sql_stops_when_a_password_is_missing():
    pg = start_postgres()
    try:
        result = run_init_sql(
            pg, {k: v for k, v in PASSWORDS.items() if k != "TRACES_READER_PASSWORD"}
        )
        assert result.returncode != 0
        assert "TRACES_READER_PASSWORD is not set" in result.stderr
    finally:
        pg.stop()

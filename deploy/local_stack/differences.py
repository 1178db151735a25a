"""What differs from docker-compose.yml on one machine, and why: tests/integration/test_stack.py
fails on a difference not listed here."""

from __future__ import annotations

from deploy.local_stack.layout import MARKER

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
        "RAGWATCH_DVC_REMOTE": (
            "{state}/dvc-remote",
            "a folder standing in for MinIO's bucket: every task pushes there",
        ),
    },
    "env_dropped": {
        "RAGWATCH_QDRANT_URL": "Qdrant local mode",
        "RAGWATCH_QDRANT_API_KEY": "Qdrant local mode",
        "RAGWATCH_LLM_BACKEND": "the offline backend (the default) instead of vLLM",
        "RAGWATCH_GENERATOR__BASE_URL": "no vLLM",
        "RAGWATCH_GENERATOR__MODEL": "no vLLM",
        "RAGWATCH_GENERATOR__API_KEY": "no vLLM",
        "RAGWATCH_JUDGE__BASE_URL": "no vLLM",
        "RAGWATCH_JUDGE__MODEL": "no vLLM",
        "RAGWATCH_JUDGE__API_KEY": "no vLLM",
        "RAGWATCH_EMBEDDINGS_BACKEND": "local embeddings (the default) instead of vLLM",
        "RAGWATCH_EMBEDDINGS__BASE_URL": "no vLLM",
        "RAGWATCH_EMBEDDINGS__MODEL": "no vLLM",
        "RAGWATCH_EMBEDDINGS__API_KEY": "no vLLM",
        "AWS_ACCESS_KEY_ID": "no MinIO",
        "AWS_SECRET_ACCESS_KEY": "no MinIO",
        "AWS_ENDPOINT_URL_S3": "no MinIO",
        "AWS_DEFAULT_REGION": "no MinIO",
    },
    "args_added": {
        # They would start Airflow's log server, which binds every interface (0.0.0.0:8793/8794, no
        # setting narrows it); the api-server reads task logs from the folder it shares with them.
        "airflow-scheduler": ["--skip-serve-logs"],
        "airflow-triggerer": ["--skip-serve-logs"],
        "airflow-worker": [
            "--skip-serve-logs"
        ],  # and `--celery-hostname worker-N@host`: see WORKER_ENV_DOC
    },
    "commands_replaced": {
        "redis": "redis-server reads its password, address and data folder from a 0600 config file "
        "(<state>/redis.conf), not from the command line that `ps` shows",
    },
}
"""Read by tests/integration/test_stack.py: any other difference from the compose file fails it."""

LOCAL_EXECUTOR = {
    "services": {
        "airflow-worker": "LocalExecutor: the scheduler runs the tasks itself (`--executor celery` runs workers)",
        "redis": "the Celery broker; LocalExecutor needs none",
    },
    "env_replaced": {
        "AIRFLOW__CORE__EXECUTOR": (
            "LocalExecutor",
            "the default on one machine (`--executor celery`: compose's)",
        )
    },
    "env_dropped": {
        "AIRFLOW__CELERY__RESULT_BACKEND": "no Celery",
        "AIRFLOW__CELERY__BROKER_URL": "no Celery",
    },
}
"""What the default executor leaves out on top of ONE_MACHINE; with `--executor celery`, compose's
Celery runs."""


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
"""Set per Celery worker on top of the Airflow environment, with the reason. Shared with every other
Airflow process, as on several machines: the services, the data workspace (RAGWATCH_WORKSPACE: a
shared filesystem mount there), the folders standing in for the Qdrant and MinIO services, and the
task log folder (compose's airflow-logs volume: the workers skip Airflow's log server, which binds
every interface)."""

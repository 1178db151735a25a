"""Build ragwatch Settings inside a task: Airflow Connections override the environment.

A team keeps endpoints and credentials where Airflow keeps them (Connections, backed by a
secrets backend); `pipelines` stays unaware of Airflow and receives plain settings.
"""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowNotFoundException
from sqlalchemy.engine import URL

from pipelines.core.settings import Settings, load_settings

TRACE_STORE_CONN_ID = "ragwatch_trace_store"
LLM_CACHE_CONN_ID = "ragwatch_llm_cache"
"""The PostgreSQL database of the LLM cache every worker shares (RAGWATCH_LLM_CACHE_URL)."""
TARGET_CONN_ID = "ragwatch_target"
"""The system under test's credentials: extra {"headers": {...}}, or a password sent as a bearer
token."""
DVC_POOL = "ragwatch_dvc"
LLM_POOL = "ragwatch_llm"
DEFAULT_ARGS = {
    "retries": 2,
    "retry_delay": timedelta(seconds=20),
    "retry_exponential_backoff": True,
}
"""Every ragwatch task retries transient failures (a busy model server, a locked store, a lost
worker) with backoff: 20-40 s, then 40-80 s. Every step is idempotent, so a retry is safe; a verdict
is not retried (`fail_now_on`)."""

_DRIVERS = {
    "postgres": "postgresql+psycopg",
    "postgresql": "postgresql+psycopg",
    "mysql": "mysql",
    "sqlite": "sqlite",
}


def sqlalchemy_url(conn) -> str:
    """SQLAlchemy URL of an Airflow Connection (conn types postgres, mysql, sqlite)."""
    driver = _DRIVERS.get(conn.conn_type)
    if driver is None:
        raise ValueError(
            f"connection {conn.conn_id!r} has type {conn.conn_type!r}; ragwatch reads databases of types {sorted(_DRIVERS)}"
        )
    if driver == "sqlite":
        return f"sqlite:///{conn.host}"
    url = URL.create(
        driver,
        username=conn.login,
        password=conn.password,
        host=conn.host,
        port=conn.port,
        database=conn.schema,
    )
    return url.render_as_string(hide_password=False)


def target_headers(conn) -> dict[str, str]:
    """HTTP headers for the system under test from its Airflow Connection (never from the target
    URL)."""
    headers = dict(conn.extra_dejson.get("headers") or {})
    if conn.password and not any(h.lower() == "authorization" for h in headers):
        headers["Authorization"] = f"Bearer {conn.password}"
    return headers


def trace_source_overrides(conn) -> dict[str, str]:
    """A span-export source from the trace store's connection: extra {"source": "otlp" |
    "openinference" | "langfuse-export", "path": the file, folder or s3:// prefix}
    (RAGWATCH_TRACE_SOURCE and _PATH); any type."""
    extra = conn.extra_dejson
    path = extra.get("path") or conn.host
    if not path:
        raise ValueError(
            f"connection {conn.conn_id!r} names the trace source {extra['source']!r} but no path: give its "
            'extra a "path" (a file, a folder or an s3:// prefix)'
        )
    return {"trace_source": extra["source"], "trace_source_path": path}


def _connection(conn_id: str):
    try:
        return BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        return None


def ragwatch_settings() -> Settings:
    overrides: dict = {}
    target = _connection(TARGET_CONN_ID)
    if target is not None:
        overrides["target_headers"] = target_headers(target)
    conn = _connection(TRACE_STORE_CONN_ID)
    if conn is not None and conn.extra_dejson.get("source", "sql") != "sql":
        overrides.update(trace_source_overrides(conn))
    elif conn is not None:
        overrides["trace_store_url"] = sqlalchemy_url(conn)
        extra = conn.extra_dejson
        if "table" in extra:
            overrides["trace_table"] = extra["table"]
            overrides["trace_tables_allowed"] = [extra["table"]]
        if "columns" in extra:
            overrides["trace_columns"] = extra["columns"]
    cache = _connection(LLM_CACHE_CONN_ID)
    if cache is not None:
        overrides["llm_cache_url"] = sqlalchemy_url(cache)
    return load_settings(**overrides)

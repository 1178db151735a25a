"""The LLM cache in PostgreSQL (`RAGWATCH_LLM_CACHE_URL`), shared by every worker of a deployment.

The local cache is a SQLite file under each machine's RAGWATCH_HOME: on Celery workers on several
machines a retry or backfill that lands on another worker would pay every model call again, and
SQLite's WAL does not work on network file systems. This one keeps the same keys and values in one
table every worker reads: a batch judged on one worker and rerun on another sends no request.

Every call runs synchronously inside the LLM client's event loop, so each is one autocommit round
trip on a pooled connection (no BEGIN/COMMIT, no ping). One engine per URL and process; a forked
child (Airflow and Celery fork their task processes) drops the parent's pool untouched and opens its
own.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any, Callable, TypeVar

import psycopg
import sqlalchemy as sa
from sqlalchemy.engine import Engine, make_url

from pipelines.core.redact import redact_text

TABLE = "ragwatch_llm_cache"
SETTING = "RAGWATCH_LLM_CACHE_URL"
T = TypeVar("T")
_OR_LOCAL = f"unset {SETTING} to use the local SQLite cache under RAGWATCH_HOME instead"
CONNECT_TIMEOUT_S = 10

_GET = f"SELECT value FROM {TABLE} WHERE key = %(key)s"
# Content-addressed: a key already stored holds an equally valid reply, so the first writer wins.
_PUT = f"INSERT INTO {TABLE} (key, value) VALUES (%(key)s, %(value)s::json) ON CONFLICT (key) DO NOTHING"
_COUNT = f"SELECT count(*) FROM {TABLE}"
# `json`, not `jsonb`: it keeps the text as written and accepts \u0000, which a model's reply may
# hold.
_CREATE = sa.text(
    f"CREATE TABLE IF NOT EXISTS {TABLE} (key text PRIMARY KEY, value json NOT NULL, "
    "stored_at timestamptz NOT NULL DEFAULT now())"
)


class LLMCacheError(RuntimeError):
    """The shared LLM cache is misconfigured or unreachable; the message says what to fix (never the
    password)."""


class SharedLLMCache:
    """get / put / count, like the local LLMCache, on a PostgreSQL table every worker shares."""

    def __init__(self, url: str):
        self.engine = _engine(url)
        self.where = self.engine.url.render_as_string(hide_password=True)

    def get(self, key: str) -> dict[str, Any] | None:
        row = self._execute(_GET, {"key": key}, psycopg.Cursor.fetchone)
        return row[0] if row else None  # psycopg reads `json` into Python values

    def put(self, key: str, value: dict[str, Any]) -> None:
        self._execute(
            _PUT,
            {"key": key, "value": json.dumps(value, sort_keys=True, ensure_ascii=False)},
            lambda _: None,
        )

    def count(self) -> int:
        return self._execute(_COUNT, {}, psycopg.Cursor.fetchone)[0]

    def _execute(self, sql: str, params: dict[str, Any], read: Callable[[psycopg.Cursor], T]) -> T:
        # psycopg on the pool's connection, past SQLAlchemy's statement layer: a hit costs the event
        # loop about half the client CPU (0.25-0.3 ms against 0.5-0.6 ms, measured here), and
        # psycopg prepares the three statements on each connection after a few uses. A connection
        # the server dropped (a restart, an idle timeout) is thrown away and the call retried once
        # on a fresh one, instead of a ping before every call.
        for attempt in (1, 2):
            pooled = self.engine.raw_connection()
            try:
                return read(pooled.driver_connection.execute(sql, params))
            except psycopg.Error as exc:
                if pooled.driver_connection.broken:
                    pooled.invalidate()
                    if attempt == 1:
                        continue
                raise LLMCacheError(_problem(self.where, exc)) from None
            finally:
                pooled.close()  # back to the pool (an invalidated one is discarded)
        raise AssertionError("unreachable")


_ENGINES: dict[str, Engine] = {}
_ENGINES_LOCK = threading.Lock()


def _engine(url: str) -> Engine:
    """This process's engine for `url`, its table checked (and created if missing) once."""
    with _ENGINES_LOCK:
        engine = _ENGINES.get(url)
        if engine is None:
            engine = _ENGINES[url] = _open(url)
        return engine


def _open(url: str) -> Engine:
    try:
        parsed = make_url(url)
    except (sa.exc.ArgumentError, ValueError):
        # Neither the value nor SQLAlchemy's message (it repeats the value) is shown: either may
        # hold the password.
        raise LLMCacheError(
            f"{SETTING} is not a SQLAlchemy URL (its value is not shown: it may hold a password); write it as "
            f"postgresql+psycopg://user:password@host:5432/database, or {_OR_LOCAL}"
        ) from None
    where = parsed.render_as_string(hide_password=True)
    if parsed.get_backend_name() != "postgresql":
        raise LLMCacheError(
            f"{SETTING}={where}: the shared LLM cache needs PostgreSQL (postgresql+psycopg://user:password@host/db); "
            f"{_OR_LOCAL}"
        )
    connect_args = (
        {} if "connect_timeout" in parsed.query else {"connect_timeout": CONNECT_TIMEOUT_S}
    )
    # Autocommit: each statement is its own transaction, so a returned connection has nothing to
    # roll back.
    engine = sa.create_engine(
        parsed, isolation_level="AUTOCOMMIT", connect_args=connect_args, pool_reset_on_return=None
    )
    try:
        with engine.connect() as conn:
            exists = lambda: (
                conn.execute(sa.text("SELECT to_regclass(:t)"), {"t": TABLE}).scalar() is not None
            )  # noqa: E731
            if not exists():
                try:
                    conn.execute(_CREATE)
                except sa.exc.DBAPIError as exc:
                    # IF NOT EXISTS does not see a table another session is creating: workers that
                    # start together collide on the catalog's unique index, and all but the first
                    # find the table made.
                    if not (
                        isinstance(
                            exc.orig,
                            (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateTable),
                        )
                        and exists()
                    ):
                        raise
    except sa.exc.DBAPIError as exc:
        engine.dispose()
        raise LLMCacheError(_problem(where, exc)) from None
    return engine


def _problem(where: str, exc: Exception) -> str:
    reason = exc.orig if isinstance(exc, sa.exc.DBAPIError) else exc
    return (
        f"the shared LLM cache at {SETTING}={where} failed: {redact_text(str(reason)).strip()}. Check that the "
        f"server is up and reachable from this worker, and the user, password and database; the role needs to read and "
        f"write table {TABLE} (and create it on first use); or {_OR_LOCAL}."
    )


def _forget_parent_pools() -> None:
    # A forked child must not use or close the parent's connections (they share its sockets): drop
    # the pools without touching them, and each engine opens fresh connections in the child. The
    # lock may have been held by another thread of the parent at the fork: the child takes a new
    # one.
    global _ENGINES_LOCK
    _ENGINES_LOCK = threading.Lock()
    for engine in _ENGINES.values():
        engine.dispose(close=False)


os.register_at_fork(after_in_child=_forget_parent_pools)

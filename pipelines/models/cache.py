"""Content-addressed cache of successful model calls, so reruns and backfills cost no calls.

The key is the sha256 of everything that determines a reply (model, messages, JSON schema,
tools, sampling parameters) in canonical JSON; the value is the validated reply as JSON. One
SQLite file in WAL mode: readers never block, and several processes (DAG tasks running in
parallel) can share it. Failed calls are never stored, so a rerun retries them.

Workers on several machines share one PostgreSQL table instead (`RAGWATCH_LLM_CACHE_URL`,
shared_cache.py): `open_llm_cache` picks the one the settings name.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pipelines.core.settings import Settings

BUSY_TIMEOUT_S = 30.0


def cache_key(**parts: Any) -> str:
    canonical = json.dumps(
        parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


class ResponseCache(Protocol):
    def get(self, key: str) -> dict[str, Any] | None: ...
    def put(self, key: str, value: dict[str, Any]) -> None: ...
    def count(self) -> int: ...


def open_llm_cache(settings: Settings) -> ResponseCache | None:
    """The cache the settings name: none, the shared PostgreSQL table, or the SQLite file under
    RAGWATCH_HOME."""
    if not settings.llm_cache:
        return None
    if settings.llm_cache_url:
        from pipelines.models.shared_cache import (
            SharedLLMCache,
        )  # psycopg is loaded only where a shared cache is configured

        return SharedLLMCache(settings.llm_cache_url)
    return LLMCache.in_directory(settings.resolved_cache_dir)


def _use_wal(db: sqlite3.Connection) -> None:
    """Switch the file to WAL, a property of the file that every later connection inherits.

    The switch takes an exclusive lock without calling SQLite's busy handler, so processes that open
    a new cache at the same instant (a DAG's parallel tasks) get "database is locked" at once: wait
    for the lock as `timeout` would.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


class LLMCache:
    """The local cache: one SQLite file per machine."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._connections: dict[tuple[int, int], sqlite3.Connection] = {}
        with self._connect() as db:
            _use_wal(db)
            db.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT NOT NULL, stored_at REAL)"
            )

    @classmethod
    def in_directory(cls, cache_dir: Path) -> LLMCache:
        return cls(Path(cache_dir) / "llm" / "responses.sqlite")

    def get(self, key: str) -> dict[str, Any] | None:
        row = (
            self._connect().execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        )
        return json.loads(row[0]) if row else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        with self._connect() as db:  # the context manager commits (it does not close)
            db.execute(
                "INSERT OR REPLACE INTO responses (key, value, stored_at) VALUES (?, ?, ?)",
                (key, json.dumps(value, sort_keys=True, ensure_ascii=False), time.time()),
            )

    def count(self) -> int:
        return self._connect().execute("SELECT count(*) FROM responses").fetchone()[0]

    def _connect(self) -> sqlite3.Connection:
        """This thread's connection (opened once; a forked process opens its own).

        Opening a connection per operation cost ~2.4 ms a call, which the event loop pays on every
        request; one per thread keeps SQLite's thread rules and is reused for the process's life.
        """
        key = (os.getpid(), threading.get_ident())
        db = self._connections.get(key)
        if db is None:
            db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S)
            db.execute("PRAGMA synchronous=NORMAL")
            self._connections[key] = db
        return db

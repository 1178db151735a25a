"""The production trace store, read through SQLAlchemy Core with bound parameters only.

Reads go through a read-only connection (SQLite `mode=ro`, PostgreSQL
`default_transaction_read_only` plus a statement timeout), stream in bounded batches, and
return raw rows: parsing a row is the caller's job, so one bad row never fails a batch.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.types import TypeDecorator

from pipelines.core.settings import Settings, TraceColumns


class StoreError(RuntimeError):
    """The trace store is misconfigured or unreachable; the message says what to fix."""


class LenientTimestamp(TypeDecorator):
    """Timestamps that come back raw, so a malformed value quarantines one row, not the batch.

    SQLite has no timestamp type: values are ISO text in UTC, compared lexically.
    """

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect):
        if dialect.name == "sqlite":
            return dialect.type_descriptor(sa.String(40))
        return dialect.type_descriptor(sa.DateTime(timezone=True))

    def process_bind_param(self, value, dialect):
        if dialect.name == "sqlite" and isinstance(value, datetime):
            return value.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")
        return value


def trace_table(name: str, columns: TraceColumns) -> sa.Table:
    text = sa.Text
    return sa.Table(
        name,
        sa.MetaData(),
        sa.Column(columns.trace_id, sa.String(128), primary_key=True, key="trace_id"),
        sa.Column(columns.ts, LenientTimestamp(), index=True, nullable=True, key="ts"),
        sa.Column(columns.question, text, key="question"),
        sa.Column(columns.answer, text, key="answer"),
        sa.Column(columns.contexts, text, key="contexts"),
        sa.Column(columns.tool_calls, text, key="tool_calls"),
        sa.Column(columns.model, sa.String(200), key="model"),
        sa.Column(columns.app, sa.String(200), key="app"),
        sa.Column(columns.language, sa.String(16), key="language"),
        sa.Column(columns.user_feedback, sa.SmallInteger, key="user_feedback"),
        sa.Column(columns.latency_ms, sa.Integer, key="latency_ms"),
        sa.Column(columns.metadata, text, key="metadata"),
    )


def _sqlite_in_interval(ts, start: datetime, end: datetime):
    """SQLite keeps timestamps as text, possibly with an offset (`…T01:30:00+02:00`): its strftime
    turns them into UTC, so a trace lands in its UTC day. The raw-text range, a day wider on each
    side, keeps the index on ts useful; a value strftime cannot read is kept when its text starts
    with the day, so parsing quarantines it with its reason instead of it silently vanishing from
    every day."""
    utc = sa.func.strftime("%Y-%m-%d %H:%M:%f", ts)

    def text(value: datetime, pattern: str = "%Y-%m-%d %H:%M:%S") -> sa.BindParameter:
        value = value.astimezone(timezone.utc)
        shown = value.strftime(pattern) + (
            f".{value.microsecond // 1000:03d}" if "%S" in pattern else ""
        )
        return sa.bindparam(None, shown, type_=sa.String)

    margin = timedelta(days=1)
    return sa.and_(
        ts >= text(start - margin, "%Y-%m-%d"),
        ts < text(end + margin, "%Y-%m-%d"),
        sa.or_(
            sa.and_(utc >= text(start), utc < text(end)),
            sa.and_(utc.is_(None), ts >= text(start, "%Y-%m-%d"), ts < text(end, "%Y-%m-%d")),
        ),
    )


TRACE_FIELDS = (
    "trace_id",
    "ts",
    "question",
    "answer",
    "contexts",
    "tool_calls",
    "model",
    "app",
    "language",
    "user_feedback",
    "latency_ms",
    "metadata",
)


QUERY_CANCELED = "57014"
"""PostgreSQL's SQLSTATE for a statement its statement_timeout cancelled."""


class TraceStore:
    def __init__(
        self,
        url: str,
        table: str,
        columns: TraceColumns,
        *,
        allowed_tables: Sequence[str],
        batch_size: int = 500,
        statement_timeout_s: float = 60,
        read_only: bool = True,
        timeout_setting: str = "RAGWATCH_STATEMENT_TIMEOUT_S",
    ):
        if table not in allowed_tables:
            raise StoreError(
                f"table {table!r} is not in the allow-list {list(allowed_tables)}; "
                "add it to RAGWATCH_TRACE_TABLES_ALLOWED if it really holds traces"
            )
        self.table = trace_table(table, columns)
        self.batch_size = batch_size
        self.statement_timeout_s, self.timeout_setting = statement_timeout_s, timeout_setting
        self.engine = _engine(url, read_only=read_only, statement_timeout_s=statement_timeout_s)

    @classmethod
    def from_settings(
        cls, settings: Settings, *, read_only: bool = True, selection: bool = False
    ) -> TraceStore:
        """`selection`: the store the day's selection reads through, under its own statement timeout
        (it reads every row of the day; the reads by id that follow are short and keep the general
        one)."""
        timeout, setting = (
            (settings.selection_statement_timeout_s, "RAGWATCH_SELECTION_STATEMENT_TIMEOUT_S")
            if selection
            else (settings.statement_timeout_s, "RAGWATCH_STATEMENT_TIMEOUT_S")
        )
        return cls(
            settings.resolved_trace_store_url,
            settings.trace_table,
            settings.trace_columns,
            allowed_tables=settings.trace_tables_allowed,
            batch_size=settings.trace_batch_size,
            statement_timeout_s=timeout,
            read_only=read_only,
            timeout_setting=setting,
        )

    def _in_interval(self, start: datetime, end: datetime):
        ts = self.table.c.ts
        if self.engine.dialect.name != "sqlite":
            # PostgreSQL compares in UTC: the session time zone is UTC (see _engine), so a
            # `timestamp without time zone` column reads as UTC whatever the server or role default.
            return sa.and_(
                ts >= sa.bindparam("start", start, type_=ts.type),
                ts < sa.bindparam("end", end, type_=ts.type),
            )
        return _sqlite_in_interval(ts, start, end)

    def count_by(self, start: datetime, end: datetime, keys: Sequence[str]) -> dict[tuple, int]:
        """Row counts per combination of `keys` for traces whose ts falls in [start, end)."""
        cols = [self.table.c[k] for k in keys]
        query = (
            sa.select(*cols, sa.func.count()).where(self._in_interval(start, end)).group_by(*cols)
        )
        with self._timeout_named(), self._connect() as conn:
            return {tuple(row[:-1]): row[-1] for row in conn.execute(query)}

    def iter_keys(self, start: datetime, end: datetime, keys: Sequence[str]) -> Iterator[tuple]:
        """(trace_id, *keys) for the interval, streamed; light enough for any table size."""
        cols = [self.table.c.trace_id, *(self.table.c[k] for k in keys)]
        query = sa.select(*cols).where(self._in_interval(start, end))
        yield from self._stream(query)

    @property
    def ranks_in_sql(self) -> bool:
        """Whether `iter_lowest` can rank rows in the server (PostgreSQL: window functions and
        sha256)."""
        return self.engine.dialect.name == "postgresql"

    def iter_lowest(
        self,
        start: datetime,
        end: datetime,
        keys: Sequence[str],
        targets: dict[tuple, int],
        order: Callable[[sa.ColumnElement], sa.ColumnElement],
    ) -> Iterator[tuple]:
        """(trace_id, *keys) of the interval's rows that rank within their stratum's target,
        streamed.

        A stratum is a combination of `keys` values (NULL is a value); its rows are ranked by
        `order` (an SQL expression of the trace_id column), then by trace_id, highest first; those
        ranked above `targets[stratum]` stay in the server. PostgreSQL only (`ranks_in_sql`).
        """
        wanted_rows = [(*stratum, n) for stratum, n in targets.items() if n > 0]
        if not wanted_rows:  # an empty day, or a rate that selects nothing: VALUES needs a row
            return
        t = self.table
        names = [
            f"k{i}" for i in range(len(keys))
        ]  # labels: the user's column names may be anything
        rank = sa.func.row_number().over(
            partition_by=[t.c[k] for k in keys] or None,
            order_by=[order(t.c.trace_id), t.c.trace_id.collate("C").desc()],
        )
        ranked = (
            sa.select(
                t.c.trace_id.label("trace_id"),
                *(t.c[k].label(n) for k, n in zip(keys, names)),
                rank.label("rank"),
            )
            .where(self._in_interval(start, end))
            .subquery()
        )
        wanted = sa.values(
            *(sa.column(n, t.c[k].type) for k, n in zip(keys, names)),
            sa.column("target", sa.Integer),
            name="wanted",
        ).data(wanted_rows)
        # Cast: a VALUES column of NULLs only (a day without any user_feedback) would be text, not
        # the column's type.
        same_stratum = sa.and_(
            sa.true(),
            *(
                ranked.c[n].is_not_distinct_from(sa.cast(wanted.c[n], t.c[k].type))
                for k, n in zip(keys, names)
            ),
        )
        # The largest target first, a constant: PostgreSQL stops ranking a stratum there (a window
        # run condition) and the join below, a nested loop (IS NOT DISTINCT FROM cannot hash), sees
        # the selectable rows, not the day's.
        most = max(n for *_, n in wanted_rows)
        query = (
            sa.select(ranked.c.trace_id, *(ranked.c[n] for n in names))
            .select_from(ranked.join(wanted, same_stratum))
            .where(
                ranked.c.rank <= sa.literal(most, sa.BigInteger), ranked.c.rank <= wanted.c.target
            )
        )
        yield from self._stream(query)

    def iter_rows(
        self, start: datetime, end: datetime, trace_ids: Iterable[str]
    ) -> Iterator[dict[str, Any]]:
        """Full raw rows for the given ids of the interval, in trace_id order, batch by batch."""
        ordered = sorted(set(trace_ids))
        for i in range(0, len(ordered), self.batch_size):
            batch = ordered[i : i + self.batch_size]
            query = (
                sa.select(*(self.table.c[f].label(f) for f in TRACE_FIELDS))
                .where(self._in_interval(start, end), self.table.c.trace_id.in_(batch))
                .order_by(self.table.c.trace_id)
            )
            with self._timeout_named(), self._connect() as conn:
                for row in conn.execute(query):
                    yield dict(row._mapping)

    def _stream(self, query) -> Iterator[tuple]:
        with self._timeout_named(), self._connect() as conn:
            result = conn.execution_options(stream_results=True, yield_per=self.batch_size).execute(
                query
            )
            for partition in result.partitions():
                yield from (tuple(r) for r in partition)

    @contextmanager
    def _timeout_named(self) -> Iterator[None]:
        """A statement the server cancelled for its timeout fails naming the setting that sets
        it."""
        try:
            yield
        except sa.exc.OperationalError as exc:
            if getattr(exc.orig, "sqlstate", None) != QUERY_CANCELED:
                raise
            raise self._timed_out() from exc

    def _timed_out(self) -> StoreError:
        return StoreError(
            f"a trace-store query ran past its statement timeout ({self.statement_timeout_s:g} s) and was "
            f"cancelled: raise {self.timeout_setting} (docs/how-to/sizing.md sizes it for a day's rows)"
        )

    def _connect(self):
        try:
            return self.engine.connect()
        except sa.exc.OperationalError as exc:
            if (
                getattr(exc.orig, "sqlstate", None) == QUERY_CANCELED
            ):  # the first connection's own queries
                raise self._timed_out() from exc
            raise StoreError(
                f"cannot open the trace store {self.engine.url.render_as_string(hide_password=True)}: "
                f"{exc.orig}. Check RAGWATCH_TRACE_STORE_URL or the ragwatch_trace_store connection."
            ) from exc

    # Writing is for the demo seeder and tests only; production stores are written by the app.
    def create_table(self) -> None:
        self.table.metadata.create_all(self.engine)

    def insert_rows(self, rows: Iterable[dict[str, Any]]) -> int:
        n = 0
        with self.engine.begin() as conn:
            batch: list[dict] = []
            for row in rows:
                batch.append({k: _as_text(k, row.get(k)) for k in TRACE_FIELDS})
                if len(batch) >= self.batch_size:
                    conn.execute(sa.insert(self.table), batch)
                    n, batch = n + len(batch), []
            if batch:
                conn.execute(sa.insert(self.table), batch)
                n += len(batch)
        return n


def _as_text(field: str, value: Any) -> Any:
    if field in ("contexts", "tool_calls", "metadata") and not (
        value is None or isinstance(value, str)
    ):
        return json.dumps(value, ensure_ascii=False)
    return value


def _engine(url: str, *, read_only: bool, statement_timeout_s: float) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        path = Path(parsed.database)
        if not read_only:
            path.parent.mkdir(parents=True, exist_ok=True)
            return sa.create_engine(parsed)
        if not path.exists():
            raise StoreError(
                f"the trace store {path} does not exist: seed it with `ragwatch demo seed` "
                "or point RAGWATCH_TRACE_STORE_URL at your store"
            )
        # SQLite enforces read-only itself when opened as a URI with mode=ro.
        return sa.create_engine(f"sqlite:///file:{path}?mode=ro&uri=true")
    if parsed.get_backend_name() == "postgresql":
        # timezone=UTC: naive `timestamp` columns read as UTC, whatever the server's or the role's
        # default zone.
        options = (
            f"-c statement_timeout={max(1, round(statement_timeout_s * 1000))} -c timezone=UTC"
        )
        if read_only:
            options += " -c default_transaction_read_only=on"
        return sa.create_engine(parsed, connect_args={"options": options}, pool_pre_ping=True)
    return sa.create_engine(parsed)

"""The trace store on SQLite and on a real PostgreSQL with a least-privilege read-only role."""

from datetime import date, datetime, timezone

import pytest
import sqlalchemy as sa

from pipelines.demo.traces import generate_store_rows
from pipelines.settings import Settings
from pipelines.stores.traces import StoreError, TraceStore
from pipelines.traces.sampling import day_interval

DAY = date(2026, 11, 20)
END = date(2026, 11, 22)


def rows():
    return list(generate_store_rows(days=2, per_day=60, end=END, seed=3))


def expected_in_day(all_rows, day):
    start, end = day_interval(day)
    return sorted(r["trace_id"] for r in all_rows if isinstance(r["ts"], datetime) and start <= r["ts"] < end)


def test_the_table_must_be_on_the_allow_list(settings):
    with pytest.raises(StoreError, match="allow-list"):
        TraceStore.from_settings(settings.model_copy(update={"trace_table": "users"}))


def test_table_and_column_names_must_be_identifiers():
    with pytest.raises(ValueError, match="identifier"):
        Settings(trace_table="traces; drop table x")
    with pytest.raises(ValueError, match="identifier"):
        Settings(trace_columns={"question": "q --"})


def test_sqlite_reads_are_read_only_and_interval_bound(settings):
    writer = TraceStore.from_settings(settings, read_only=False)
    writer.create_table()
    all_rows = rows()
    writer.insert_rows(all_rows)
    reader = TraceStore.from_settings(settings)
    day = date(2026, 11, 21)
    start, end = day_interval(day)
    ids = [r[0] for r in reader.iter_keys(start, end, ["app"])]
    good = expected_in_day(all_rows, day)
    assert set(good) <= set(ids)  # plus the bad-timestamp rows that sort inside the day
    assert sum(reader.count_by(start, end, ["app"]).values()) == len(ids)
    fetched = list(reader.iter_rows(start, end, ids))
    assert [r["trace_id"] for r in fetched] == sorted(ids)
    with pytest.raises(sa.exc.OperationalError, match="readonly"), reader.engine.begin() as conn:
        conn.execute(sa.delete(reader.table))


def test_custom_table_and_column_names(tmp_path):
    settings = Settings(home=tmp_path, trace_table="rag_logs", trace_tables_allowed=["rag_logs"],
                        trace_columns={"question": "user_query", "ts": "created_at"})  # fmt: skip
    writer = TraceStore.from_settings(settings, read_only=False)
    writer.create_table()
    writer.insert_rows(rows())
    with writer.engine.connect() as conn:
        columns = {c["name"] for c in sa.inspect(conn).get_columns("rag_logs")}
    assert {"user_query", "created_at"} <= columns and "question" not in columns
    reader = TraceStore.from_settings(settings)
    start, end = day_interval(DAY)
    ids = [r[0] for r in reader.iter_keys(start, end, ["app"])]
    row = next(reader.iter_rows(start, end, ids))
    assert row["question"] and row["ts"] and "user_query" not in row


def test_postgres_reader_role_reads_one_interval_and_cannot_write(postgres, settings):
    postgres.psql("CREATE ROLE rw_owner LOGIN PASSWORD 'owner-pw'; CREATE ROLE rw_reader LOGIN PASSWORD 'reader-pw';")
    postgres.psql("CREATE DATABASE prod_traces OWNER rw_owner;")
    owner = settings.model_copy(update={"trace_store_url": postgres.url("rw_owner", "owner-pw", "prod_traces")})
    writer = TraceStore.from_settings(owner, read_only=False)
    writer.create_table()
    all_rows = [r for r in rows() if isinstance(r["ts"], datetime)]  # PostgreSQL rejects malformed timestamps itself
    writer.insert_rows(all_rows)
    postgres.psql("REVOKE ALL ON SCHEMA public FROM PUBLIC; GRANT USAGE ON SCHEMA public TO rw_reader;"
                  "GRANT SELECT ON traces TO rw_reader;", database="prod_traces")  # fmt: skip

    reader = TraceStore.from_settings(settings.model_copy(
        update={"trace_store_url": postgres.url("rw_reader", "reader-pw", "prod_traces")}))  # fmt: skip
    day = date(2026, 11, 21)
    start, end = day_interval(day)
    ids = sorted(r[0] for r in reader.iter_keys(start, end, ["app", "language"]))
    assert ids == expected_in_day(all_rows, day)
    fetched = list(reader.iter_rows(start, end, ids))
    assert fetched[0]["ts"].tzinfo is not None
    assert {r["trace_id"] for r in fetched} == set(ids)
    with pytest.raises(sa.exc.InternalError, match="read-only transaction"), reader.engine.begin() as conn:
        conn.execute(sa.delete(reader.table))
    # Even outside the read-only session setting, the role itself has no write grant.
    plain = sa.create_engine(postgres.url("rw_reader", "reader-pw", "prod_traces"))
    with pytest.raises(sa.exc.ProgrammingError, match="permission denied"), plain.begin() as conn:
        conn.execute(sa.delete(reader.table))
    plain.dispose()


def test_a_wrong_password_says_what_to_check(postgres, settings):
    bad = settings.model_copy(update={"trace_store_url": postgres.url("nobody", "wrong", "postgres")})
    with pytest.raises(StoreError, match="RAGWATCH_TRACE_STORE_URL"):
        TraceStore.from_settings(bad).count_by(*day_interval(DAY), ["app"])

"""The trace store on SQLite and on a real PostgreSQL with a least-privilege read-only role."""

from datetime import date, datetime, timedelta, timezone

import pytest
import sqlalchemy as sa

from pipelines.core.settings import Settings
from pipelines.stores.traces import StoreError, TraceStore
from pipelines.traces.sampling import day_interval
from ragwatch_harness.demo.traces import generate_store_rows

DAY = date(2026, 11, 20)
END = date(2026, 11, 22)


def rows():
    return list(generate_store_rows(days=2, per_day=60, end=END, seed=3))


def expected_in_day(all_rows, day):
    start, end = day_interval(day)
    return sorted(
        r["trace_id"] for r in all_rows if isinstance(r["ts"], datetime) and start <= r["ts"] < end
    )


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
    settings = Settings(
        home=tmp_path,
        trace_table="rag_logs",
        trace_tables_allowed=["rag_logs"],
        trace_columns={"question": "user_query", "ts": "created_at"},
    )
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
    postgres.psql(
        "CREATE ROLE rw_owner LOGIN PASSWORD 'owner-pw'; CREATE ROLE rw_reader LOGIN PASSWORD 'reader-pw';"
    )
    postgres.psql("CREATE DATABASE prod_traces OWNER rw_owner;")
    owner = settings.model_copy(
        update={"trace_store_url": postgres.url("rw_owner", "owner-pw", "prod_traces")}
    )
    writer = TraceStore.from_settings(owner, read_only=False)
    writer.create_table()
    all_rows = [
        r for r in rows() if isinstance(r["ts"], datetime)
    ]  # PostgreSQL rejects malformed timestamps itself
    writer.insert_rows(all_rows)
    postgres.psql(
        "REVOKE ALL ON SCHEMA public FROM PUBLIC; GRANT USAGE ON SCHEMA public TO rw_reader;"
        "GRANT SELECT ON traces TO rw_reader;",
        database="prod_traces",
    )

    reader = TraceStore.from_settings(
        settings.model_copy(
            update={"trace_store_url": postgres.url("rw_reader", "reader-pw", "prod_traces")}
        )
    )
    day = date(2026, 11, 21)
    start, end = day_interval(day)
    ids = sorted(r[0] for r in reader.iter_keys(start, end, ["app", "language"]))
    assert ids == expected_in_day(all_rows, day)
    fetched = list(reader.iter_rows(start, end, ids))
    assert fetched[0]["ts"].tzinfo is not None
    assert {r["trace_id"] for r in fetched} == set(ids)
    with (
        pytest.raises(sa.exc.InternalError, match="read-only transaction"),
        reader.engine.begin() as conn,
    ):
        conn.execute(sa.delete(reader.table))
    # Even outside the read-only session setting, the role itself has no write grant.
    plain = sa.create_engine(postgres.url("rw_reader", "reader-pw", "prod_traces"))
    with pytest.raises(sa.exc.ProgrammingError, match="permission denied"), plain.begin() as conn:
        conn.execute(sa.delete(reader.table))
    plain.dispose()


def test_a_wrong_password_says_what_to_check(postgres, settings):
    bad = settings.model_copy(
        update={"trace_store_url": postgres.url("nobody", "wrong", "postgres")}
    )
    with pytest.raises(StoreError, match="RAGWATCH_TRACE_STORE_URL"):
        TraceStore.from_settings(bad).count_by(*day_interval(DAY), ["app"])


def plain_row(trace_id: str, ts) -> dict:
    return {
        "trace_id": trace_id,
        "ts": ts,
        "question": "¿Cuál es el límite?",
        "answer": "100 por minuto.",
        "contexts": [{"chunk_id": "c1", "text": "El límite es 100 por minuto.", "score": 0.9}],
        "tool_calls": [],
        "model": "m",
        "app": "docs",
        "language": "es",
        "user_feedback": None,
        "latency_ms": 10,
        "metadata": {},
    }


OFFSET_ROWS = {  # SQLite text as apps write it, and the UTC day each instant belongs to
    "late-madrid": ("2026-03-02T01:30:00+02:00", date(2026, 3, 1)),
    "early-utc": ("2026-03-02 00:30:00", date(2026, 3, 2)),
    "z-suffix": ("2026-03-01T23:59:59.999Z", date(2026, 3, 1)),
    "new-york-evening": ("2026-03-01T20:00:00-05:00", date(2026, 3, 2)),
    "micro-seconds": ("2026-03-01 12:00:00.123456+00:00", date(2026, 3, 1)),
    "midnight-exactly": ("2026-03-02T00:00:00+00:00", date(2026, 3, 2)),
}


def test_sqlite_text_with_an_offset_lands_in_its_utc_day_and_a_malformed_one_is_quarantined(
    settings,
):
    from pipelines.core.workspace import PartitionPaths
    from pipelines.stores.partitions import read_manifest
    from pipelines.traces.steps import stage_trace_sample

    writer = TraceStore.from_settings(settings, read_only=False)
    writer.create_table()
    writer.insert_rows(
        [plain_row(tid, ts) for tid, (ts, _) in OFFSET_ROWS.items()]
        + [plain_row("broken-hour", "2026-03-01 25:00:00")]
    )
    reader = TraceStore.from_settings(settings)
    for day in (date(2026, 3, 1), date(2026, 3, 2)):
        ids = {r[0] for r in reader.iter_keys(*day_interval(day), ["app"])}
        expected = {tid for tid, (_, utc_day) in OFFSET_ROWS.items() if utc_day == day}
        assert ids - {"broken-hour"} == expected, day
        assert sum(reader.count_by(*day_interval(day), ["app"]).values()) == len(ids)
    staged = stage_trace_sample(
        settings, date(2026, 3, 1), rate=1.0, strata=["app"], min_per_stratum=0
    )
    counts = staged.counts
    assert (
        counts.sampled == 3 and counts.quarantined == 1
    )  # the day publishes, the bad row waits in quarantine
    assert read_manifest(PartitionPaths(staged.staged).manifest)["quarantine_reasons"] == {
        "bad_timestamp": 1
    }


@pytest.mark.services
def test_postgres_naive_timestamps_read_as_utc_in_a_session_of_another_zone(postgres, settings):
    postgres.psql(
        "CREATE ROLE tz_reader LOGIN PASSWORD 'tz-pw'; ALTER ROLE tz_reader SET timezone = 'Asia/Tokyo';"
    )
    postgres.psql("CREATE DATABASE tz_traces;")  # not allowed inside the same transaction
    postgres.psql(
        "CREATE TABLE traces (trace_id varchar(128) PRIMARY KEY, ts timestamp without time zone, question text,"
        " answer text, contexts text, tool_calls text, model varchar(200), app varchar(200), language varchar(16),"
        " user_feedback smallint, latency_ms integer, metadata text);"
        "INSERT INTO traces (trace_id, ts, question, answer, app, language) VALUES"
        " ('utc-late', '2026-03-01 23:30:00', 'q', 'a', 'docs', 'es'),"
        " ('utc-early', '2026-03-02 00:30:00', 'q', 'a', 'docs', 'es');"
        "GRANT SELECT ON traces TO tz_reader;",
        database="tz_traces",
    )
    url = postgres.url("tz_reader", "tz-pw", "tz_traces")
    day = date(2026, 3, 1)
    start, end = day_interval(day)
    # Without ragwatch's session settings, Tokyo time shifts the day by nine hours: the bug this
    # guards.
    plain = sa.create_engine(url)
    with plain.connect() as conn:
        shifted = conn.execute(
            sa.text("SELECT trace_id FROM traces WHERE ts >= :s AND ts < :e"),
            {"s": start, "e": end},
        )
        assert {r[0] for r in shifted} == {"utc-late", "utc-early"}
    plain.dispose()
    reader = TraceStore.from_settings(settings.model_copy(update={"trace_store_url": url}))
    assert [r[0] for r in reader.iter_keys(start, end, ["app"])] == ["utc-late"]
    [row] = reader.iter_rows(start, end, ["utc-late"])
    from pipelines.traces.parse import parse_timestamp

    assert parse_timestamp(row["ts"]) == datetime(2026, 3, 1, 23, 30, tzinfo=timezone.utc)


@pytest.mark.services
def test_postgres_ranks_the_selection_in_the_server_as_python_does(postgres, settings):
    """The server sends only each stratum's selectable rows; the selection is the one of every row's
    key in Python."""
    import random

    from pipelines.traces.select import (
        select_traces,
        selection_key,
        selection_key_sql,
        stratum_target,
    )

    postgres.psql("CREATE ROLE rank_owner LOGIN PASSWORD 'rank-pw';")
    postgres.psql("CREATE DATABASE ranked_traces OWNER rank_owner;")
    url = postgres.url("rank_owner", "rank-pw", "ranked_traces")
    store = TraceStore.from_settings(
        settings.model_copy(update={"trace_store_url": url}), read_only=False
    )
    store.create_table()
    rng = random.Random(7)
    start, end = day_interval(DAY)
    store.insert_rows(
        {
            "trace_id": f"tr-{i:05d}{rng.choice(['', '-ñ', '-日本'])}",
            "ts": start + (end - start) * rng.random(),
            "question": "q",
            "answer": "a",
            "app": rng.choice(["docs", "soporte", "pagos"]),
            "language": rng.choice(["es", "en"]),
            "user_feedback": rng.choice([-1, 0, 1, None]),
        }
        for i in range(3_000)
    )
    strata = ["app", "language", "user_feedback"]
    population = store.count_by(start, end, strata)
    assert (("docs", "es", None) in population) and len(population) == 24
    for rate, floor in ((0.05, 2), (0.3, 0), (1.0, 0)):
        targets = {s: stratum_target(n, rate, floor) for s, n in population.items()}
        sent = list(store.iter_lowest(start, end, strata, targets, selection_key_sql))
        assert len(sent) == sum(
            targets.values()
        )  # nothing beyond each stratum's target leaves the server
        in_server = select_traces(population, sent, rate=rate, min_per_stratum=floor)
        in_python = select_traces(
            population, store.iter_keys(start, end, strata), rate=rate, min_per_stratum=floor
        )
        assert in_server == in_python
    unstratified = store.count_by(start, end, [])
    targets = {(): stratum_target(unstratified[()], 0.1, 0)}
    in_server = select_traces(
        unstratified,
        store.iter_lowest(start, end, [], targets, selection_key_sql),
        rate=0.1,
        min_per_stratum=0,
    )
    assert in_server == select_traces(
        unstratified, store.iter_keys(start, end, []), rate=0.1, min_per_stratum=0
    )
    assert len(in_server.trace_ids) == 300
    assert (
        list(store.iter_lowest(start, end, strata, {}, selection_key_sql)) == []
    )  # an empty day selects nothing
    with store.engine.connect() as conn:
        ids = [row[0] for row in conn.execute(sa.select(store.table.c.trace_id).limit(50))]
        keys = conn.execute(
            sa.select(store.table.c.trace_id, selection_key_sql(store.table.c.trace_id)).where(
                store.table.c.trace_id.in_(ids)
            )
        )
        assert {trace_id: int.from_bytes(key, "big") for trace_id, key in keys} == {
            i: selection_key(i) for i in ids
        }
    store.engine.dispose()


@pytest.mark.services
def test_the_selection_has_its_own_statement_timeout_and_names_it_when_it_runs_out(
    postgres, settings
):
    from pipelines.core.workspace import Workspace
    from pipelines.traces import steps

    postgres.psql("CREATE ROLE sel_owner LOGIN PASSWORD 'sel-pw';")
    postgres.psql("CREATE DATABASE selected_traces OWNER sel_owner;")
    owner = settings.model_copy(
        update={"trace_store_url": postgres.url("sel_owner", "sel-pw", "selected_traces")}
    )
    writer = TraceStore.from_settings(owner, read_only=False)
    writer.create_table()
    with (
        writer.engine.begin() as conn
    ):  # 5,000 traces of the day, built in the server; no user_feedback at all
        conn.execute(
            sa.text(
                "INSERT INTO traces (trace_id, ts, question, answer, app, language, user_feedback) "
                "SELECT 'tr-' || md5(g::text), :start + make_interval(secs => g * 17.28), 'q', 'a', "
                "(ARRAY['docs','soporte'])[1 + g % 2], 'es', NULL FROM generate_series(0, 4999) AS g"
            ),
            {"start": day_interval(DAY)[0]},
        )
    writer.engine.dispose()

    for selection, shown in (
        (True, "1500ms"),
        (False, "1min"),
    ):  # reads by id keep RAGWATCH_STATEMENT_TIMEOUT_S (60 s)
        store = TraceStore.from_settings(
            owner.model_copy(update={"selection_statement_timeout_s": 1.5}), selection=selection
        )
        with store.engine.connect() as conn:
            assert conn.execute(sa.text("SHOW statement_timeout")).scalar() == shown
        store.engine.dispose()
    tight = owner.model_copy(update={"selection_statement_timeout_s": 0.001})
    with pytest.raises(StoreError) as raised:
        steps.select_trace_sample(tight, DAY, rate=0.05)
    assert "statement timeout (0.001 s)" in str(
        raised.value
    ) and "raise RAGWATCH_SELECTION_STATEMENT_TIMEOUT_S" in str(raised.value)
    staging = Workspace.from_settings(owner).root / ".staging"
    assert not staging.exists() or not any(
        staging.rglob("*.parquet")
    )  # a failed selection leaves nothing
    planned = steps.select_trace_sample(owner, DAY, rate=0.05)  # the default timeout: the day fits
    assert planned[-1].rows[1] == 250


def test_the_demo_plants_its_new_topic_on_the_last_days_only_and_changes_nothing_else():
    from ragwatch_harness.demo.traces import NEW_TOPIC

    plain = list(generate_store_rows(days=2, per_day=60, end=END, seed=3))
    planted = list(
        generate_store_rows(
            days=2, per_day=60, end=END, seed=3, new_topic_days=1, new_topic_share=0.3
        )
    )
    topic = {q for questions in NEW_TOPIC.values() for q in questions}

    def asks_topic(row) -> bool:
        return any(q in (row["question"] or "") for q in topic)

    changed = [(a, b) for a, b in zip(plain, planted) if a != b]
    assert [a["trace_id"] for a in plain] == [b["trace_id"] for b in planted]
    assert changed and all(asks_topic(b) and not asks_topic(a) for a, b in changed)
    assert all(
        str(b["ts"]) >= str(END - timedelta(days=1)) for _, b in changed
    )  # the last day only
    assert 0.15 <= len(changed) / 60 <= 0.45

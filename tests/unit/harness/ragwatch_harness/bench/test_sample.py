"""The sampling benchmark, tiny: its day looks like production and its report adds up (no
timing)."""

from datetime import timedelta

import pytest
import sqlalchemy as sa

from pipelines.core.settings import Settings
from pipelines.stores.traces import TraceStore
from pipelines.traces.sampling import day_interval
from pipelines.traces.select import stratum_target
from ragwatch_harness.bench.sample import (
    BENCH_TABLE,
    DAY,
    STEPS,
    TRACE_BYTES,
    build_day,
    run_sample_bench,
)


def test_a_tiny_bench_reports_every_task_and_counts_that_add_up(tmp_path):
    rows = 400
    # Without the DVC task, the slowest and the one this bench does not change.
    result = run_sample_bench(
        rows, store="sqlite", rate=0.1, workers=2, version=False, home=tmp_path / "bench"
    )
    assert list(result["tasks"]) == [
        "select",
        "shard 0",
        "merge",
        "validate",
        "promote",
    ]  # a small day: one shard
    assert [name.split()[0] for name in result["tasks"]] == [s for s in STEPS if s != "version"]
    assert result["rows"] == rows and result["store"] == "sqlite"
    assert TRACE_BYTES[0] * 0.9 <= result["mean_trace_bytes"] <= TRACE_BYTES[1]
    # At least the proportional share, and no more than the per-stratum floors can add.
    assert stratum_target(rows, 0.1, 0) <= result["selected"] < rows / 2
    assert result["sampled"] + result["quarantined"] == result["selected"] and result["sampled"] > 0
    assert result["wall_s"] == pytest.approx(sum(t["wall_s"] for t in result["tasks"].values()))
    assert result["rows_per_s"] == pytest.approx(rows / result["wall_s"])
    for task in result["tasks"].values():
        assert (
            task["wall_s"] > 0
            and task["cpu_s"] > 0
            and 30 < task["peak_rss_mb"] <= task["tree_peak_rss_mb"]
        )
    # (No comparison of one task's CPU with another's: at 40 sampled rows it is a coin flip under
    # load.)
    assert result["cpu_s"] == pytest.approx(sum(t["cpu_s"] for t in result["tasks"].values()))
    assert result["peak_rss_mb"] == max(t["peak_rss_mb"] for t in result["tasks"].values())
    assert not (tmp_path / "bench").exists()  # the bench leaves nothing behind


def test_one_process_runs_every_step_as_the_command_line_does(tmp_path):
    result = run_sample_bench(
        300,
        store="sqlite",
        rate=0.1,
        workers=2,
        version=False,
        one_process=True,
        home=tmp_path / "bench",
    )
    assert list(result["tasks"]) == ["cli"]
    assert result["sampled"] + result["quarantined"] == result["selected"] > 0
    cli = result["tasks"]["cli"]
    assert (
        cli["wall_s"] == result["wall_s"]
        and 30 < cli["peak_rss_mb"] <= cli["tree_peak_rss_mb"] == result["peak_tree_rss_mb"]
    )
    assert not (tmp_path / "bench").exists()


def test_a_postgres_day_is_built_in_the_server_with_unique_ids_inside_the_day(postgres, tmp_path):
    postgres.psql("CREATE ROLE bench_owner LOGIN PASSWORD 'owner-pw'")
    postgres.psql("CREATE DATABASE bench_day OWNER bench_owner")
    settings = Settings(
        home=tmp_path,
        trace_store_url=postgres.url("bench_owner", "owner-pw", "bench_day"),
        trace_table=BENCH_TABLE,
        trace_tables_allowed=[BENCH_TABLE],
    )
    store = TraceStore.from_settings(settings, read_only=False)
    built = build_day(store, 2_500, seed=3)
    assert built["pool"] < 2_500  # replicated from the pool, not sent row by row
    table = store.table
    with store.engine.connect() as conn:
        count, distinct, first, last = conn.execute(
            sa.select(
                sa.func.count(),
                sa.func.count(sa.distinct(table.c.trace_id)),
                sa.func.min(table.c.ts),
                sa.func.max(table.c.ts),
            )
        ).one()
        apps = conn.execute(sa.select(sa.func.count(sa.distinct(table.c.app)))).scalar()
        sizes = conn.execute(sa.select(sa.func.avg(sa.func.length(table.c.contexts)))).scalar()
    start, end = day_interval(DAY)
    assert count == distinct == 2_500
    assert start <= first < last < end and last - first > timedelta(hours=23)
    assert apps > 1 and float(sizes) > TRACE_BYTES[0] / 2
    assert sum(store.count_by(start, end, ["app"]).values()) == 2_500

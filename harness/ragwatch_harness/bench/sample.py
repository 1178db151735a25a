"""The trace-sampling DAG step at production scale: a synthetic day of N traces, sampled end to end.

The day is built from a pool of realistic demo traces (Spanish and English, PII planted, about 1.5 %
broken rows), each padded with more retrieved contexts to 5–10 KB as production traces are, then
replicated under new trace ids and timestamps spread over the day. The padding is drawn from a
corpus of `CORPUS_CHUNKS` chunks (the indexing bench's generated prose): the contexts of a
production day are chunks of the team's corpus, and how many distinct ones a day holds is what the
step's per-context memory (`privacy.memo`) gains on, so the report counts them. On PostgreSQL the
replication runs in the server (generate_series); on SQLite rows are inserted in batches.

The step then runs as Airflow runs it: sample, validate, promote and version, each task in a fresh
process of its own. Each task's peak RSS is its process's own high-water mark (getrusage); the tree
figure is the peak of its process and its workers together, sampled every 0.2 s. Its CPU time (its
own and its workers') is reported next to the wall time: on a shared machine the wall time also
measures the neighbours. Building the day is timed apart and is not part of the step.
"""

from __future__ import annotations

import io
import json
import multiprocessing
import queue
import random
import resource
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from datetime import time as day_time
from pathlib import Path
from typing import Any, Literal

import psutil
import sqlalchemy as sa
from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

from pipelines.core.settings import Settings
from pipelines.stores.traces import TRACE_FIELDS, TraceStore
from ragwatch_harness.bench.peak_memory import own_peak_rss_mb
from ragwatch_harness.bench.synthetic_corpus import chunk_texts
from ragwatch_harness.demo.traces import generate_store_rows
from ragwatch_harness.postgres import start_postgres

DAY = date(2026, 11, 20)
POOL_SIZE = 2_000
"""Distinct traces the day is replicated from: enough variety for the anonymizer's work to be
typical."""
TRACE_BYTES = (5_000, 10_000)
CORPUS_CHUNKS = 10_000
"""The corpus the padding contexts come from: the size the indexing bench's targets are set for."""
MAX_POOL_ROW_BYTES = 20_000
"""The demo's multi-MB logging-bug rows stay out of the pool: replicated, they would be most of the
day."""
INSERT_BATCH_ROWS = 100_000
BENCH_TABLE = "ragwatch_bench_traces"
STEPS = ("select", "shard", "merge", "validate", "promote", "version")


def pool_rows(size: int, seed: int) -> list[dict[str, Any]]:
    """`size` raw store rows of the demo, padded with corpus chunks to 5–10 KB each."""
    rng = random.Random(seed)
    rows = [
        r
        for r in generate_store_rows(days=1, per_day=size, end=DAY + timedelta(days=1), seed=seed)
        if _row_bytes(r) <= MAX_POOL_ROW_BYTES
    ]
    corpus = [
        {"chunk_id": f"bench/{i:05d}", "text": text, "score": 0.5}
        for i, text in enumerate(chunk_texts(CORPUS_CHUNKS, seed))
    ]
    for row in rows:
        contexts = _contexts(row)
        if contexts is None:
            continue  # a broken row stays as broken as the demo made it
        target = rng.randint(*TRACE_BYTES)
        while _row_bytes(row) < target:
            contexts.append(rng.choice(corpus))
            row["contexts"] = json.dumps(contexts, ensure_ascii=False)
    return rows


def _contexts(row: dict[str, Any]) -> list | None:
    try:
        value = json.loads(row["contexts"]) if isinstance(row.get("contexts"), str) else None
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, list) else None


def _row_bytes(row: dict[str, Any]) -> int:
    return sum(len(str(v).encode()) for v in row.values() if v is not None)


def day_row(pool: list[dict[str, Any]], n: int, rows: int) -> dict[str, Any]:
    """Row `n` of a day of `rows`: a pool row under a new id, its timestamp spread over the day."""
    start = datetime.combine(DAY, day_time(0), tzinfo=UTC)
    return dict(
        pool[n % len(pool)],
        trace_id=f"tr-bench-{n:010d}",
        ts=start + timedelta(days=1) * (n / rows),
    )


def build_day(store: TraceStore, rows: int, seed: int) -> dict[str, Any]:
    """Fill the (empty) table of `store` with a day of `rows` traces; what was built."""
    pool = pool_rows(min(rows, POOL_SIZE), seed)
    store.create_table()
    if store.engine.dialect.name == "postgresql":
        _replicate_in_postgres(store, pool, rows)
    else:
        for start in range(0, rows, INSERT_BATCH_ROWS):
            store.insert_rows(
                day_row(pool, n, rows) for n in range(start, min(rows, start + INSERT_BATCH_ROWS))
            )
    used = pool[:rows]
    pooled = [_row_bytes(day_row(pool, n, rows)) for n in range(len(used))]
    contexts = [
        str(c.get("text")) if isinstance(c, dict) else str(c)
        for row in used
        for c in _contexts(row) or []
    ]
    return {
        "rows": rows,
        "mean_trace_bytes": sum(pooled) / len(pooled),
        "pool": len(pool),
        "contexts": len(contexts),
        "distinct_contexts": len(set(contexts)),
    }


def _replicate_in_postgres(store: TraceStore, pool: list[dict[str, Any]], rows: int) -> None:
    """INSERT … SELECT from generate_series joined to the pool: the server copies, Python sends
    2,000 rows."""
    table = store.table
    pool_table = sa.Table(
        "ragwatch_bench_pool",
        sa.MetaData(),
        sa.Column("n", sa.Integer, primary_key=True),
        *(
            sa.Column(f, c.type)
            for f, c in ((f, table.c[f]) for f in TRACE_FIELDS)
            if f not in ("trace_id", "ts")
        ),
    )
    copied = [f for f in TRACE_FIELDS if f not in ("trace_id", "ts")]
    with store.engine.begin() as conn:
        pool_table.create(conn)
        conn.execute(
            sa.insert(pool_table),
            [{"n": i, **{f: r.get(f) for f in copied}} for i, r in enumerate(pool)],
        )
    start = datetime.combine(DAY, day_time(0), tzinfo=UTC)
    g = (
        sa.func.generate_series(
            sa.bindparam("lo", type_=sa.BigInteger), sa.bindparam("hi", type_=sa.BigInteger)
        )
        .table_valued("n")
        .render_derived(name="g")
    )
    select = sa.select(
        sa.literal("tr-bench-") + sa.func.lpad(sa.cast(g.c.n, sa.Text), 10, "0"),
        sa.bindparam("start", start, type_=sa.DateTime(timezone=True))
        + sa.func.make_interval(0, 0, 0, 0, 0, 0, g.c.n * (86_400.0 / rows)),
        *(pool_table.c[f] for f in copied),
    ).select_from(g.join(pool_table, pool_table.c.n == g.c.n % len(pool)))
    insert = sa.insert(table).from_select(["trace_id", "ts", *copied], select)
    for lo in range(0, rows, INSERT_BATCH_ROWS):
        with store.engine.begin() as conn:
            conn.execute(insert, {"lo": lo, "hi": min(rows, lo + INSERT_BATCH_ROWS) - 1})
    with store.engine.begin() as conn:
        pool_table.drop(conn)
    with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(sa.text(f"ANALYZE {conn.dialect.identifier_preparer.quote(table.name)}"))


# -- the step, one task per process ------------------------------------------------------------


class _Planned(BaseModel):
    shards: list[Any]


def _run_task(name: str, settings: Settings, previous: dict | None, results) -> None:
    """One task of the DAG in this (fresh) process; puts its result, CPU time and peak RSS."""
    from pipelines.traces import steps

    tree = _TreeRss()
    tree.start()
    if name == "cli":  # every step in this one process, as `ragwatch traces sample` runs them
        result = steps.run_trace_sampling(settings, DAY, version=previous["version"])
    elif name == "select":
        result = _Planned(shards=steps.select_trace_sample(settings, DAY))
    elif name.startswith("shard"):
        result = steps.write_trace_shard(settings, steps.PlannedShard.model_validate(previous))
    elif name == "merge":
        result = steps.merge_trace_sample(
            settings, [steps.PlannedShard.model_validate(s) for s in previous["shards"]]
        )
    elif name == "validate":
        result = steps.validate_trace_sample(steps.StagedSample.model_validate(previous))
    elif name == "promote":
        result = steps.promote_trace_sample(settings, steps.StagedSample.model_validate(previous))
    else:
        result = steps.version_trace_sample(settings, steps.PromotedSample.model_validate(previous))
    tree.stop()
    own = own_peak_rss_mb()
    # CPU seconds, the task's and its finished children's: on a shared machine the wall time says
    # how busy the machine was, CPU time what the task cost.
    cpu = sum(
        r.ru_utime + r.ru_stime
        for r in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    )
    results.put(
        {
            "result": result.model_dump(mode="json"),
            "peak_rss_mb": own,
            "cpu_s": cpu,
            "tree_peak_rss_mb": max(own, tree.peak_mb),
        }
    )


class _TreeRss(threading.Thread):
    """Samples the RSS of this process and its descendants (the workers) every 0.2 s; keeps the
    peak.

    getrusage cannot give it: it knows the largest child only, and counts a spawned worker at the
    size of the process it was forked from, before it became a fresh interpreter.
    """

    def __init__(self):
        super().__init__(daemon=True)
        self.peak_mb, self._done = 0.0, threading.Event()

    def run(self) -> None:
        me = psutil.Process()
        while not self._done.wait(0.2):
            total = 0
            for process in [me, *me.children(recursive=True)]:
                try:
                    total += process.memory_info().rss
                except psutil.Error:
                    pass  # a worker that ended between the listing and the reading
            self.peak_mb = max(self.peak_mb, total / 2**20)

    def stop(self) -> None:
        self._done.set()
        self.join()


def in_spawned_process(target: Callable[..., None], args: tuple, label: str) -> tuple[Any, float]:
    """`target(*args, results)` in a fresh spawned process, as Airflow runs a task: what it put on
    `results`, and the wall time as Airflow would see it (a fresh interpreter and its imports
    included)."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    started = time.perf_counter()
    process = context.Process(target=target, args=(*args, results))
    process.start()
    outcome = None
    while outcome is None:
        try:
            outcome = results.get(timeout=1)
        except queue.Empty:
            if not process.is_alive():
                raise RuntimeError(
                    f"{label} exited with {process.exitcode} (see its log above)"
                ) from None
    process.join()
    return outcome, time.perf_counter() - started


def run_task_in_process(name: str, settings: Settings, previous: dict | None) -> dict[str, Any]:
    outcome, wall = in_spawned_process(_run_task, (name, settings, previous), f"the {name} task")
    return dict(outcome, wall_s=wall)


def run_step(
    settings: Settings, *, version: bool = True, one_process: bool = False
) -> dict[str, Any]:
    """Every task of the trace-sampling DAG in order, each in a fresh process, with its figures; or,
    with `one_process`, every step in one fresh process as the command line runs them (one figure:
    "cli")."""
    if one_process:
        return {"cli": run_task_in_process("cli", settings, {"version": version})}
    tasks: dict[str, dict[str, Any]] = {}
    planned = tasks.setdefault("select", run_task_in_process("select", settings, None))["result"]
    for shard in planned["shards"]:  # one after the other: the figures are each task's own
        tasks[f"shard {shard['index']}"] = run_task_in_process(
            f"shard {shard['index']}", settings, shard
        )
    staged = tasks.setdefault("merge", run_task_in_process("merge", settings, planned))["result"]
    tasks["validate"] = run_task_in_process("validate", settings, staged)
    promoted = tasks.setdefault("promote", run_task_in_process("promote", settings, staged))[
        "result"
    ]
    if version:
        tasks["version"] = run_task_in_process("version", settings, promoted)
    return tasks


# -- the benchmark -----------------------------------------------------------------------------


@contextmanager
def bench_store(store: Literal["sqlite", "postgres"], url: str | None, home: Path) -> Iterator[str]:
    """The URL of a store for the bench's table: a file under `home`, `url`, or a throwaway
    PostgreSQL."""
    if store == "sqlite":
        yield f"sqlite:///{home / 'bench-traces.db'}"
        return
    if url:
        yield url
        return
    postgres = start_postgres()
    try:
        postgres.psql("CREATE ROLE ragwatch_bench LOGIN PASSWORD 'bench'")
        postgres.psql(
            "CREATE DATABASE bench OWNER ragwatch_bench"
        )  # not in a transaction with the role
        yield postgres.url("ragwatch_bench", "bench", "bench")
    finally:
        postgres.stop()


def run_sample_bench(
    rows: int,
    *,
    store: Literal["sqlite", "postgres"] = "sqlite",
    url: str | None = None,
    rate: float = 0.05,
    workers: int = 0,
    seed: int = 11,
    version: bool = True,
    one_process: bool = False,
    home: Path | None = None,
) -> dict[str, Any]:
    """Build a day of `rows` traces, run the sampling step on it, and report its figures."""
    home = Path(tempfile.mkdtemp(prefix="ragwatch-bench-sample-")) if home is None else home
    try:
        with bench_store(store, url, home) as store_url:
            settings = Settings(
                home=home,
                trace_store_url=store_url,
                trace_table=BENCH_TABLE,
                trace_tables_allowed=[BENCH_TABLE],
                anonymizer_key="ragwatch-bench-key",
                sample_rate=rate,
                sample_workers=workers,
            )
            writer = TraceStore.from_settings(settings, read_only=False)
            if sa.inspect(writer.engine).has_table(BENCH_TABLE):
                raise RuntimeError(
                    f"{BENCH_TABLE} already exists in the store: the bench only fills a table it creates"
                )
            started = time.perf_counter()
            built = build_day(writer, rows, seed)
            build_s = time.perf_counter() - started
            try:
                tasks = run_step(settings, version=version, one_process=one_process)
            finally:
                writer.table.drop(writer.engine)
                writer.engine.dispose()
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return _report(rows, store, rate, built, build_s, tasks)


def _report(
    rows: int, store: str, rate: float, built: dict, build_s: float, tasks: dict
) -> dict[str, Any]:
    counts = (tasks.get("merge") or tasks["cli"])["result"]["counts"]
    wall = sum(t["wall_s"] for t in tasks.values())
    return {
        "rows": rows,
        "store": store,
        "rate": rate,
        "mean_trace_bytes": built["mean_trace_bytes"],
        "contexts": built["contexts"],
        "distinct_contexts": built["distinct_contexts"],
        "build_s": build_s,
        "selected": counts["selected"],
        "sampled": counts["sampled"],
        "quarantined": counts["quarantined"],
        "wall_s": wall,
        "cpu_s": sum(t["cpu_s"] for t in tasks.values()),
        "rows_per_s": rows / wall,
        "sampled_per_s": counts["selected"] / wall,
        "peak_rss_mb": max(t["peak_rss_mb"] for t in tasks.values()),
        "peak_tree_rss_mb": max(t["tree_peak_rss_mb"] for t in tasks.values()),
        "tasks": {
            name: {k: t[k] for k in ("wall_s", "cpu_s", "peak_rss_mb", "tree_peak_rss_mb")}
            for name, t in tasks.items()
        },
    }


def format_sample_bench(result: dict[str, Any]) -> str:
    table = Table(
        title=(
            f"Trace sampling step: a day of {result['rows']:,} traces ({result['mean_trace_bytes'] / 1000:.1f} KB "
            f"each on average) on {result['store']}, rate {result['rate']}"
        )
    )
    for column in (
        "task",
        "wall",
        "CPU",
        "peak RSS (task process)",
        "peak RSS (with its children, at most)",
    ):
        table.add_column(column, justify="left" if column == "task" else "right")
    for name, task in result["tasks"].items():
        table.add_row(
            name,
            f"{task['wall_s']:.1f} s",
            f"{task['cpu_s']:.1f} s",
            f"{task['peak_rss_mb']:.0f} MB",
            f"{task['tree_peak_rss_mb']:.0f} MB",
        )
    table.add_section()
    table.add_row(
        "step",
        f"{result['wall_s']:.1f} s",
        f"{result['cpu_s']:.1f} s",
        f"{result['peak_rss_mb']:.0f} MB",
        f"{result['peak_tree_rss_mb']:.0f} MB",
    )
    console = Console(file=io.StringIO(), width=110)
    console.print(table)
    console.print(
        f"{result['rows_per_s']:,.0f} day rows/s, {result['sampled_per_s']:,.0f} sampled rows/s; "
        f"{result['selected']:,} selected = {result['sampled']:,} sampled + {result['quarantined']:,} quarantined. "
        f"Building the day took {result['build_s']:.1f} s (not part of the step). Its traces repeat a pool of "
        f"{result['contexts']:,} retrieved contexts, {result['distinct_contexts']:,} distinct texts (chunks of a "
        f"{CORPUS_CHUNKS:,}-chunk corpus and the demo's own): the step checks each distinct one once per worker."
    )
    return console.file.getvalue()

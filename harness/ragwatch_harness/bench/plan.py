"""The golden plan's read of trace questions at production scale: 14 days of N sampled traces each.

The days are sampled partitions as the trace-sampling step publishes them (parquet, row groups of
`ROW_GROUP_SIZE`), holding the columns the plan reads; the others (answers, contexts…) are never
read, parquet stores each column apart, so they would cost disk, not the plan's memory. A day
repeats a pool of demo traces (Spanish and English, three apps; a few questions too short or too
long for the plan's filter) under new trace ids: one day is built with pyarrow and written again
per day with its trace-id column rewritten.

The plan's read (`recent_trace_questions`: batches of four columns, a bounded pick per stratum) then
runs in a fresh process, as Airflow runs the plan task, with its peak RSS (its own high-water mark,
and its process tree sampled every 0.2 s: `bench.sample`'s machinery) and wall time. Beside it, the
previous loader (every row of every day as a Python dict, then the pick) runs on days of a size that
fits in memory, and its figures are scaled to N by rows read; the new read runs on those days too,
and both must pick the same questions.
"""

from __future__ import annotations

import hashlib
import io
import json
import resource
import shutil
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from rich.console import Console
from rich.table import Table

from pipelines.core.workspace import Workspace
from pipelines.golden.plan import _interleave, _rank
from pipelines.golden.steps import recent_trace_questions
from pipelines.stores.partitions import ROW_GROUP_SIZE, read_parts
from ragwatch_harness.bench.peak_memory import own_peak_rss_mb
from ragwatch_harness.bench.sample import _TreeRss, in_spawned_process
from ragwatch_harness.demo.traces import generate_traces

PLAN_DAY = date(2026, 11, 21)
"""The plan's logical date: it reads the `days` days before it."""
DAYS = 14
POOL_SIZE = 2_000
PICK = 100
"""Trace questions the plan takes (about a hundred: `from_traces` is 12 in the demo's params)."""
PREVIOUS_ROWS = 100_000
"""Rows per day the previous loader is measured on: 14 days of them fit in memory on any machine."""
SHORT_EVERY, LONG_EVERY = 50, 200
"""Every 50th pool question is cut to two words, every 200th repeated past 60: the filter has
work."""


# -- the days ----------------------------------------------------------------------------------


def pool_table(size: int, seed: int) -> pa.Table:
    """`size` demo traces (question, app, language), a few made too short or too long for the
    plan."""
    start = datetime.combine(PLAN_DAY - timedelta(days=1), datetime.min.time(), tzinfo=UTC)
    traces = [
        t.trace
        for t in generate_traces(size, seed=seed, start=start, end=start + timedelta(days=1))
    ]
    questions = []
    for i, trace in enumerate(traces):
        words = trace.question.split()
        if i % SHORT_EVERY == SHORT_EVERY - 1:
            words = words[:2]
        elif i % LONG_EVERY == LONG_EVERY - 2:
            words = words * (61 // len(words) + 1)
        questions.append(" ".join(words))
    return pa.table(
        {
            "question": questions,
            "app": [t.app for t in traces],
            "language": [t.language for t in traces],
        }
    )


def build_days(
    workspace: Workspace, rows: int, *, days: int = DAYS, seed: int = 11
) -> dict[str, Any]:
    """`days` partitions of `rows` traces before `PLAN_DAY`; what was built."""
    pool = pool_table(min(rows, POOL_SIZE), seed)
    one_day = pool.take(pa.array(np.arange(rows) % pool.num_rows))
    ordinals = pc.utf8_lpad(
        pc.cast(pa.array(np.arange(rows)), pa.string()), width=len(str(rows)), padding="0"
    )
    written = 0
    for offset in range(1, days + 1):
        day = PLAN_DAY - timedelta(days=offset)
        ids = pc.binary_join_element_wise(f"tr-{day:%Y%m%d}-", ordinals, "")
        table = pa.table(
            {"trace_id": ids, **{c: one_day[c] for c in ("question", "app", "language")}}
        )
        data = workspace.traces_partition(day).part(0)
        data.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(
            table, data, row_group_size=ROW_GROUP_SIZE, compression="zstd", use_dictionary=True
        )
        written += data.stat().st_size
    strata = set(zip(pool["app"].to_pylist(), pool["language"].to_pylist()))
    return {"rows": rows, "days": days, "bytes": written, "strata": len(strata)}


# -- the previous loader, kept to be measured beside the read that replaced it --------------------


def previous_pick(workspace: Workspace, until: date, days: int, n: int) -> list[dict[str, Any]]:
    """The plan's trace questions as read before the bounded pick: every row of every day as a dict,
    then the pick."""
    rows = []
    for offset in range(1, days + 1):
        parts = workspace.traces_partition(until - timedelta(days=offset)).parts
        if parts:
            rows += read_parts(
                parts, columns=["trace_id", "question", "app", "language"]
            ).to_pylist()
    return previous_pick_trace_questions(rows, n)


def previous_pick_trace_questions(rows: Sequence[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """`pick_trace_questions` before the bounded pick, verbatim: the reference the bounded pick must
    equal."""
    by_stratum: dict[tuple, list] = defaultdict(list)
    for row in rows:
        if 4 <= len(row["question"].split()) <= 60:
            by_stratum[(row["app"], row["language"])].append(row)
    queues = [
        sorted(by_stratum[s], key=lambda r: _rank(r["trace_id"], "trace"))
        for s in sorted(by_stratum)
    ]
    picked = []
    for round_ in _interleave(queues):
        picked.extend(round_[: n - len(picked)])
        if len(picked) >= n:
            break
    return picked


LOADERS: dict[str, Callable[[Workspace, date, int, int], list[dict[str, Any]]]] = {
    "bounded": recent_trace_questions,
    "previous": previous_pick,
}


# -- one read in a fresh process ---------------------------------------------------------------


def _run_read(loader: str, root: Path, days: int, n: int, results) -> None:
    start_mb = psutil.Process().memory_info().rss / 2**20  # the interpreter and its imports
    tree = _TreeRss()
    tree.start()
    started = time.perf_counter()
    picked = LOADERS[loader](Workspace(root), PLAN_DAY, days, n)
    read_s = time.perf_counter() - started
    tree.stop()
    own = own_peak_rss_mb()
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    results.put(
        {
            "picked": len(picked),
            "picks_sha256": picks_digest(picked),
            "start_rss_mb": start_mb,
            "read_s": read_s,
            "peak_rss_mb": own,
            "tree_peak_rss_mb": max(own, tree.peak_mb),
            "cpu_s": cpu.ru_utime + cpu.ru_stime,
        }
    )


def picks_digest(picked: list[dict[str, Any]]) -> str:
    """One hash of the picks, in order: two loaders agree when their digests do."""
    rows = [[p["trace_id"], p["question"], p["app"], p["language"]] for p in picked]
    return hashlib.sha256(json.dumps(rows, ensure_ascii=False).encode()).hexdigest()


def measure_read(loader: str, root: Path, days: int, n: int) -> dict[str, Any]:
    """`loader` over the workspace at `root` in a fresh (spawned) process: its picks and figures."""
    outcome, wall = in_spawned_process(_run_read, (loader, root, days, n), f"the {loader} read")
    return dict(outcome, wall_s=wall)


# -- the benchmark -----------------------------------------------------------------------------


def run_plan_bench(
    rows: int = 1_000_000,
    *,
    days: int = DAYS,
    n: int = PICK,
    previous_rows: int = PREVIOUS_ROWS,
    seed: int = 11,
    home: Path | None = None,
) -> dict[str, Any]:
    """Build `days` days of `rows` traces, run the plan's read on them, and the previous loader
    beside it."""
    home = Path(tempfile.mkdtemp(prefix="ragwatch-bench-plan-")) if home is None else home
    previous_rows = min(previous_rows, rows)
    try:
        big, small = Workspace(home / "days"), Workspace(home / "previous-days")
        started = time.perf_counter()
        built = build_days(big, rows, days=days, seed=seed)
        build_s = time.perf_counter() - started
        bounded = measure_read("bounded", big.root, days, n)
        if previous_rows < rows:
            build_days(small, previous_rows, days=days, seed=seed)
            same_days = {
                name: measure_read(name, small.root, days, n) for name in ("bounded", "previous")
            }
        else:
            same_days = {
                "bounded": bounded,
                "previous": measure_read("previous", big.root, days, n),
            }
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return _report(built, build_s, n, previous_rows, bounded, same_days)


def _report(
    built: dict, build_s: float, n: int, previous_rows: int, bounded: dict, same_days: dict
) -> dict[str, Any]:
    rows, days = built["rows"], built["days"]
    previous = same_days["previous"]
    scale = rows / previous_rows
    return {
        **built,
        "pick": n,
        "build_s": build_s,
        "bounded": bounded,
        "previous_rows": previous_rows,
        "same_days": same_days,
        "same_picks": same_days["bounded"]["picks_sha256"] == previous["picks_sha256"],
        # Scaled by rows read: the previous loader holds every row as a dict, so its growth over the
        # interpreter's own size is proportional to them; its time too.
        "previous_scaled": {
            "tree_peak_rss_mb": previous["start_rss_mb"]
            + (previous["tree_peak_rss_mb"] - previous["start_rss_mb"]) * scale,
            "read_s": previous["read_s"] * scale,
        },
        "rows_per_s": rows * days / bounded["read_s"],
    }


def format_plan_bench(result: dict[str, Any]) -> str:
    rows, days, small = result["rows"], result["days"], result["previous_rows"]
    table = Table(
        title=(
            f"The golden plan's read of trace questions: {days} days × {rows:,} sampled traces "
            f"({result['strata']} strata, {result['pick']} picked)"
        )
    )
    for column in (
        "read",
        "days",
        "read time",
        "task wall",
        "CPU",
        "peak RSS (process)",
        "peak RSS (with children)",
        "picks",
    ):
        table.add_column(column, justify="left" if column in ("read", "picks") else "right")

    def row(name: str, size: int, figures: dict[str, Any]) -> None:
        table.add_row(
            name,
            f"{days} × {size:,}",
            f"{figures['read_s']:.1f} s",
            f"{figures['wall_s']:.1f} s",
            f"{figures['cpu_s']:.1f} s",
            f"{figures['peak_rss_mb']:.0f} MB",
            f"{figures['tree_peak_rss_mb']:.0f} MB",
            figures["picks_sha256"][:12],
        )

    row("bounded (batches, a pick per stratum)", rows, result["bounded"])
    if small < rows:
        row("bounded", small, result["same_days"]["bounded"])
    row("previous (every row a dict)", small, result["same_days"]["previous"])
    if small < rows:
        scaled = result["previous_scaled"]
        table.add_row(
            f"previous, scaled to {rows:,} a day",
            f"{days} × {rows:,}",
            f"≈ {scaled['read_s']:.0f} s",
            "",
            "",
            "",
            f"≈ {scaled['tree_peak_rss_mb']:,.0f} MB",
            "",
        )
    console = Console(file=io.StringIO(), width=130)
    console.print(table)
    same = "the same questions" if result["same_picks"] else "DIFFERENT questions (a bug)"
    console.print(
        f"On the same days both reads picked {same}. {result['rows_per_s']:,.0f} rows/s read; the days took "
        f"{result['build_s']:.1f} s to write ({result['bytes'] / 2**20:,.0f} MB, not part of the read). "
        f"The previous loader's figures at {rows:,} a day are its growth over the interpreter "
        f"({result['same_days']['previous']['start_rss_mb']:.0f} MB) scaled by rows read."
    )
    return console.file.getvalue()

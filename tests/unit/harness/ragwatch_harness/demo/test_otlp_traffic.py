"""`make demo TRACE_SOURCE=otlp`: the demo's traffic as OTLP spans samples to what the SQL store
samples."""

from __future__ import annotations

import json
import os
from datetime import date, timedelta

from pipelines.core.workspace import Workspace
from pipelines.stores.partitions import read_manifest, read_parts
from pipelines.stores.trace_sources.spans import Span, read_otlp_json
from pipelines.stores.traces import TraceStore
from pipelines.traces import steps
from pipelines.traces.parse import Rejection, parse_row
from ragwatch_harness.demo.otlp_traffic import otlp_trace_id, write_otlp_traffic
from ragwatch_harness.demo.traces import generate_store_rows

DAY = date(2026, 11, 20)
SPAN_FIELDS = (
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
    "sample_rate",
)
"""What both paths must agree on: everything the evals read. `metadata` (and the PII counted in it)
is the app's own in the SQL store and the span tree's in an export."""


def traffic(settings) -> list[dict]:
    """A day of demo rows under OTLP trace ids, with the broken rows spans can carry (a missing
    question, a huge answer)."""
    rows = []
    for row in generate_store_rows(days=1, per_day=400, end=DAY + timedelta(days=1), seed=11):
        parsed = parse_row(row, max_field_chars=settings.max_field_chars)
        if isinstance(parsed, Rejection) and parsed.reason not in (
            "missing_field",
            "field_too_large",
        ):
            continue
        rows.append({**row, "trace_id": otlp_trace_id(row["trace_id"])})
    return rows


def test_the_demo_traffic_as_otlp_files_samples_like_the_sql_store(settings, tmp_path):
    rows = traffic(settings)
    assert any(r["question"] is None for r in rows)
    sql = settings.model_copy(update={"home": tmp_path / "sql-home"})
    store = TraceStore.from_settings(sql, read_only=False)
    store.create_table()
    store.insert_rows(rows)
    otlp = settings.model_copy(
        update={
            "home": tmp_path / "otlp-home",
            "trace_source": "otlp",
            "trace_source_path": str(tmp_path / "otlp"),
        }
    )
    written = write_otlp_traffic(
        rows, tmp_path / "otlp" / "traces.jsonl", max_field_chars=settings.max_field_chars
    )
    assert written == {"traces": len(rows), "left_out": 0}
    assert {
        s.trace_id
        for s in read_otlp_json(tmp_path / "otlp" / "traces.jsonl")
        if isinstance(s, Span)
    } == {r["trace_id"] for r in rows}

    results = {}
    for name, configured in (("sql", sql), ("otlp", otlp)):
        steps.run_trace_sampling(configured, DAY, version=False, rate=0.3)
        paths = Workspace.from_settings(configured).traces_partition(DAY)
        results[name] = (
            read_manifest(paths.manifest),
            read_parts(paths.parts).to_pylist(),
            read_parts(paths.quarantine_parts).to_pylist(),
        )

    (sql_manifest, sql_rows, sql_quarantine), (otlp_manifest, otlp_rows, otlp_quarantine) = (
        results["sql"],
        results["otlp"],
    )
    for key in ("population", "selected", "sampled", "quarantined", "strata"):
        assert sql_manifest[key] == otlp_manifest[key], key
    assert sql_manifest["selected"] > 100 and sql_manifest["quarantined"] >= 1
    assert [{k: r[k] for k in SPAN_FIELDS} for r in sql_rows] == [
        {k: r[k] for k in SPAN_FIELDS} for r in otlp_rows
    ]
    # The same trace, quarantined for the same fault under the same reason.
    quarantined = [(r["trace_id"], r["reason"]) for r in sql_quarantine]
    assert quarantined == [(r["trace_id"], r["reason"]) for r in otlp_quarantine]
    assert {reason for _, reason in quarantined} <= {
        "missing_field",
        "field_too_large",
        "residual_pii",
    }
    assert all(json.loads(r["metadata"])["trace_source"] == "otlp" for r in otlp_rows)


def test_a_trace_belongs_to_the_utc_day_its_root_span_starts_in(settings, tmp_path):
    """A trace started a moment before midnight UTC, whose spans end after it, is that day's; one
    started a moment after, written with a +02:00 offset, is the next day's."""
    from datetime import datetime, timezone

    from pipelines.stores.trace_sources import open_trace_source

    base = {
        "answer": "Restart it.",
        "contexts": [{"chunk_id": "ops#1", "text": "Restart the pod.", "score": 0.8}],
        "tool_calls": [],
        "model": "m",
        "app": "docs",
        "language": "en",
        "user_feedback": None,
        "metadata": {},
    }
    late = datetime(2026, 11, 20, 23, 59, 59, 900_000, tzinfo=timezone.utc)
    early = datetime.fromisoformat("2026-11-21T02:00:00.050+02:00")
    rows = [
        {
            **base,
            "trace_id": "tr-" + "a" * 32,
            "ts": late,
            "question": "How do I restart it?",
            "latency_ms": 800,
        },
        {
            **base,
            "trace_id": "tr-" + "b" * 32,
            "ts": early,
            "question": "How do I stop it?",
            "latency_ms": 800,
        },
    ]
    write_otlp_traffic(
        rows, tmp_path / "otlp" / "traces.jsonl", max_field_chars=settings.max_field_chars
    )
    configured = settings.model_copy(
        update={"trace_source": "otlp", "trace_source_path": str(tmp_path / "otlp")}
    )
    # An index of a day sampled three days ago is dropped when a new one is built: each is as large
    # as its day.
    old_index = (
        configured.home.resolve() / "trace-index" / "otlp-2026-11-17-0123456789abcdef0123.sqlite"
    )
    old_index.parent.mkdir(parents=True)
    old_index.write_bytes(b"")
    os.utime(old_index, (old_index.stat().st_atime, old_index.stat().st_mtime - 3 * 86_400))
    store = open_trace_source(configured)
    for day, trace_id in ((DAY, "a" * 32), (DAY + timedelta(days=1), "b" * 32)):
        start = datetime(day.year, day.month, day.day, tzinfo=timezone.utc)
        assert [k[0] for k in store.iter_keys(start, start + timedelta(days=1), [])] == [trace_id]
        (row,) = store.iter_rows(start, start + timedelta(days=1), [trace_id])
        assert row["ts"] in (late, early) and row["latency_ms"] == 800
    assert not old_index.exists() and len(list(old_index.parent.glob("*.sqlite"))) == 2


def test_demo_seed_writes_otlp_files_that_ragwatch_samples_from_the_command_line(tmp_path):
    """`make demo TRACE_SOURCE=otlp`'s first two commands, as scripts/demo.sh runs them."""
    import os
    import subprocess
    import sys
    from datetime import datetime, timezone

    from tests.conftest import ROOT

    env = {
        **os.environ,
        "RAGWATCH_HOME": str(tmp_path / "home"),
        "RAGWATCH_TRACE_SOURCE": "otlp",
        "RAGWATCH_TRACE_SOURCE_PATH": str(tmp_path / "otlp"),
        "RAGWATCH_ANONYMIZER_KEY": "k",
    }

    def ragwatch(*args):
        return subprocess.run(
            [sys.executable, "-m", "pipelines.cli", *args],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=env,
            timeout=600,
        )

    seeded = ragwatch("demo", "seed", "--days", "1", "--per-day", "60")
    assert seeded.returncode == 0, seeded.stdout + seeded.stderr
    assert (
        "as OTLP/JSON spans" in seeded.stdout
        and (tmp_path / "otlp" / "traces.jsonl").stat().st_size > 10_000
    )
    yesterday = datetime.now(timezone.utc).date() - timedelta(days=1)
    sampled = ragwatch(
        "traces", "sample", "--date", yesterday.isoformat(), "--rate", "1.0", "--no-version"
    )
    assert sampled.returncode == 0, sampled.stdout[-3000:] + sampled.stderr[-3000:]
    manifest = json.loads(
        (
            tmp_path
            / "home"
            / "workspace"
            / "golden"
            / "traces"
            / f"dt={yesterday}"
            / "_manifest.json"
        ).read_text()
    )
    assert (
        manifest["population"] >= 55
        and manifest["sampled"] + manifest["quarantined"] == manifest["selected"]
    )

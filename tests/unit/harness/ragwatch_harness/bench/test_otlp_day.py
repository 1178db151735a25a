"""`ragwatch bench otlp`, small: a day of OTLP/JSON span files sampled by the select and shard
tasks' processes."""

from __future__ import annotations

import json

from pipelines.stores.trace_sources.spans import Span, read_otlp_json
from ragwatch_harness.bench.otlp_day import bench_otlp_day, write_day


def test_the_generated_day_is_otlp_json_the_source_reads(tmp_path):
    write_day(tmp_path, 300)
    spans = [s for path in sorted(tmp_path.iterdir()) for s in read_otlp_json(path)]
    assert all(isinstance(s, Span) for s in spans)
    assert (
        len({s.trace_id for s in spans}) == 300 and len(spans) == 300 * 3 + 60
    )  # a tool span in one trace of five


def test_the_bench_reports_each_tasks_time_and_peak_memory(tmp_path):
    result = bench_otlp_day(2_000, rate=0.1, scratch=tmp_path)
    json.dumps(result)
    assert result["traces"] == 2_000 and result["files_mb"] >= 1
    assert 0 < result["select"]["peak_rss_mb"] < 1024 and result["select"]["seconds"] > 0
    shard = result["shards"][0]
    assert (
        200 <= shard["sampled"] < 260 and shard["quarantined"] == 0
    )  # 10 %, and at least 2 a stratum
    assert 0 < shard["peak_rss_mb"] < 1024 and result["index_mb"] >= 1


def test_ragwatch_bench_otlp_prints_the_figures():
    import subprocess
    import sys

    from tests.conftest import ROOT

    run = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "bench", "otlp", "--traces", "300"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    figures = json.loads(run.stdout)
    assert (
        figures["traces"] == 300
        and figures["select"]["peak_rss_mb"] > 0
        and len(figures["shards"]) == 1
    )

"""The online eval's benchmark, small: a day of a few sampled traces, the eval on the simulator, its
rerun."""

from __future__ import annotations

import json
from collections import Counter

import pyarrow.parquet as pq
import pytest

from pipelines.core.records import SAMPLED_TRACE_SCHEMA
from pipelines.core.settings import Settings
from pipelines.core.workspace import Workspace
from pipelines.stores.partitions import read_parts
from ragwatch_harness.bench.online import (
    CLAIMS_PER_TRACE,
    GENERATOR_MODEL,
    JUDGE_MODEL,
    JUDGE_PER_JUDGED_TRACE,
    format_online_bench,
    in_fresh_process,
    recorded_equals_served,
    run_online_bench,
)
from ragwatch_harness.bench.sampled_day import DAY, STRATA, sampled_pool, write_sampled_day

ROWS = 12


@pytest.fixture(scope="module")
def bench() -> dict:
    # The chunks the traces cite are indexed, not the whole corpus (embedding it takes minutes
    # here), and the tasks run in this process: three fresh interpreters loading the embedding model
    # cost more than the bench.
    return run_online_bench(
        ROWS, latency_s=0.02, capacity=4, whole_corpus=False, pool_size=24, fresh_processes=False
    )


def test_the_bench_counts_add_up_and_a_cached_rerun_sends_nothing(bench) -> None:
    assert sum(bench["build"]["per_stratum"].values()) == ROWS
    assert bench["judged"] == sum(bench["judged_per_stratum"].values()) > 0
    for stratum, judged in bench["judged_per_stratum"].items():
        assert judged <= bench["build"]["per_stratum"][stratum]
    assert 0 < bench["noise"] <= bench["judged"]

    sent, expected = bench["by_model"], bench["expected"]
    assert set(sent) == {JUDGE_MODEL, GENERATOR_MODEL}
    assert sent[GENERATOR_MODEL] == expected[GENERATOR_MODEL][0] == expected[GENERATOR_MODEL][1] > 0
    low, high = expected[JUDGE_MODEL]
    assert (
        low
        == bench["judged"] * JUDGE_PER_JUDGED_TRACE - bench["abstaining_answers"] * CLAIMS_PER_TRACE
    )
    assert low <= sent[JUDGE_MODEL] <= high
    assert (
        bench["requests"] == sum(sent.values()) == bench["distinct_requests"]
    )  # none sent twice, none retried
    # What the run recorded, stage by stage, is what the simulator served: in all and per model.
    assert bench["recorded_requests"] == sum(bench["recorded"].values()) == bench["requests"]
    assert bench["recorded_by_model"] == sent and recorded_equals_served(bench)
    assert (
        set(bench["recorded"]) <= {"judge", "noise_clean", "noise_noisy", "noise_control"}
        and bench["recorded"]["judge"] > 0
    )
    assert bench["recorded_tokens"] == {
        "prompt": bench["prompt_tokens"],
        "completion": bench["completion_tokens"],
    }

    assert bench["ideal_s"] == pytest.approx(bench["requests"] * 0.02 / 4)
    assert 0 < bench["efficiency"] <= 1.05 and bench["max_concurrent"] <= 4
    assert bench["tree_peak_rss_mb"] >= bench["peak_rss_mb"] > 0
    assert (
        bench["rerun"]["requests"] == bench["rerun"]["recorded_requests"] == 0
        and bench["rerun"]["judged"] == bench["judged"]
    )
    assert (
        bench["rerun"]["recorded_cache_hits"]
        == bench["recorded_requests"] + bench["recorded_cache_hits"]
    )

    text = format_online_bench(bench)
    assert (
        "cached rerun: requests sent" in text
        and "DIFFERENT" not in text
        and "requests recorded by the run, judge" in text
    )
    json.dumps(bench)  # the --json output


def test_the_day_has_the_published_schema_distinct_traces_and_skewed_strata(tmp_path) -> None:
    settings = Settings(home=tmp_path, anonymizer_key="k")
    pool = sampled_pool(settings, 60, seed=3)
    built = write_sampled_day(settings, 5_000, pool=pool, seed=3)
    partition = Workspace.from_settings(settings).traces_partition(DAY)
    table = read_parts(partition.parts)
    assert table.schema.equals(SAMPLED_TRACE_SCHEMA) and table.num_rows == 5_000
    assert (
        pq.ParquetFile(partition.part(0)).metadata.num_row_groups == 3
    )  # streamed in the sampler's row groups
    for column in (
        "trace_id",
        "question",
        "answer",
    ):  # every row is a trace of its own: no judge cache hit
        assert len(set(table.column(column).to_pylist())) == 5_000, column
    strata = Counter(
        f"{a}/{lang}"
        for a, lang in zip(table.column("app").to_pylist(), table.column("language").to_pylist())
    )
    assert strata == Counter(built["per_stratum"]) and "docs-assistant/es" in strata
    assert strata.most_common(1)[0][1] > 10 * min(strata.values())  # skewed
    assert set(strata) <= {f"{a}/{lang}" for a, lang in STRATA}
    manifest = json.loads(partition.manifest.read_text())
    assert (
        manifest["sampled"] == 5_000
        and manifest["population"] == 100_000
        and Workspace.from_settings(settings).has_traces(DAY)
    )
    assert any(row for row in table.column("tool_calls").to_pylist())


def test_a_task_in_a_fresh_process_reports_its_wall_and_peak_rss() -> None:
    figures = in_fresh_process(dict, {"answer": 42})
    assert figures["answer"] == 42 and figures["process_wall_s"] >= figures["wall_s"] >= 0
    assert figures["tree_peak_rss_mb"] >= figures["peak_rss_mb"] > 0

"""The daily online eval: a budget of the day's sample, chosen by the sampling's hash, judged in
batches.

Selection properties on small parquet partitions (same day, same traces; a larger budget, a
superset; floors per stratum; only three columns read), then the whole eval end to end against the
offline backend and, for the cache, against the LLM simulator.
"""

import json
import shutil
from collections import Counter
from datetime import date, datetime, timezone

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from markupsafe import escape

from pipelines.corpus.steps import index_corpus
from pipelines.evaluation.runs.cost import read_usage
from pipelines.evaluation.runs.folder import judge_part
from pipelines.evaluation.runs.online import (
    finalize_online_eval,
    judge_online_batch,
    prepare_online_eval,
    run_online_eval,
)
from pipelines.evaluation.runs.online import past_spread
from pipelines.evaluation.online_selection import (
    JUDGED_COLUMNS,
    SELECTION_COLUMNS,
    HalfWidthTarget,
    noise_count,
    read_judged,
    select_budget,
)
from pipelines.evaluation.runs.params import online_params
from pipelines.core.handoff import IncompleteHandoff
from pipelines.models.shared_cache import SharedLLMCache
from pipelines.core.records import SAMPLED_TRACE_SCHEMA
from pipelines.core.settings import Settings
from pipelines.stores.corpus import open_corpus_index
from pipelines.stores.results import ResultsStore
from pipelines.traces.select import selection_key
from pipelines.core.workspace import RunPaths, Workspace
from tests.conftest import ROOT
from tests.support.simulated import on_simulator
from tests.support.services import fresh_database
from tests.support.workspace_data import release_golden

DAY = date(2026, 3, 1)
SIZES = {("docs", "en"): 120, ("docs", "es"): 40, ("billing", "es"): 9, ("agent", "en"): 3}


def trace_rows(sizes, chunks=(("docs#a/1", "Restart the pod with kubectl rollout restart."),)):
    rows = []
    for (app, language), n in sizes.items():
        for i in range(n):
            chunk_id, text = chunks[i % len(chunks)]
            rows.append(
                {
                    "trace_id": f"{app}-{language}-{i:04d}",
                    "ts": datetime(2026, 3, 1, tzinfo=timezone.utc),
                    "question": f"How do I restart service {i} of {app}?",
                    "answer": f"{text} Then check service {i}.",
                    "contexts": [{"chunk_id": chunk_id, "text": text, "score": 0.9}],
                    "tool_calls": [
                        {"name": "vector_search", "arguments": json.dumps({"query": "restart"})}
                    ]
                    if i % 4 == 0
                    else [],
                    "model": "prod",
                    "app": app,
                    "language": language,
                    "user_feedback": None,
                    "latency_ms": 100,
                    "metadata": "{}",
                    "sample_rate": 0.05,
                    "sampler_version": "v",
                    "anonymizer_version": "a",
                    "pii_counts": "{}",
                }
            )
    return sorted(rows, key=lambda r: r["trace_id"])


def write_partition(path, rows, row_group_size=50):
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        pa.Table.from_pylist(rows, schema=SAMPLED_TRACE_SCHEMA),
        path,
        row_group_size=row_group_size,
        use_dictionary=False,
    )
    return path


@pytest.fixture(scope="module")
def partition(tmp_path_factory):
    return write_partition(tmp_path_factory.mktemp("day") / "part.parquet", trace_rows(SIZES))


def select(partition, max_traces, floor=5, share=0.25, **kw):
    return select_budget(
        [partition], max_traces=max_traces, min_per_stratum=floor, noise_share=share, **kw
    )


# --- the budget of one day ------------------------------------------------------------------------


def test_a_budget_is_stratified_with_floors_and_says_what_the_day_had(partition):
    chosen = select(partition, 40, floor=5)
    counts = {s.stratum: s for s in chosen.counts.strata}
    assert {s: c.day_traces for s, c in counts.items()} == {
        f"{a}/{lang}": n for (a, lang), n in SIZES.items()
    }
    assert (
        chosen.counts.day_traces == sum(SIZES.values())
        and chosen.counts.judged == len(chosen.judged) == 40
    )
    # Floors first (the 3-trace stratum gives all it has), the rest in proportion to the strata's
    # sizes.
    assert counts["agent/en"].judged == 3 and counts["billing/es"].judged == 5
    assert counts["docs/en"].judged > 2 * counts["docs/es"].judged >= 10
    for stratum in counts.values():
        assert stratum.noise == noise_count(stratum.judged, 0.25) >= 1
    assert chosen.noise <= chosen.judged and len(chosen.noise) == chosen.counts.noise
    # Each stratum keeps its smallest sampling keys.
    for (app, language), n in SIZES.items():
        ids = [f"{app}-{language}-{i:04d}" for i in range(n)]
        judged = sorted((i for i in ids if i in chosen.judged), key=selection_key)
        assert judged == sorted(ids, key=selection_key)[: len(judged)]
        assert set(judged[: counts[f"{app}/{language}"].noise]) == {
            i for i in ids if i in chosen.noise
        }


def test_the_same_day_judges_the_same_traces_and_a_larger_budget_a_superset(partition, tmp_path):
    first = select(partition, 30)
    # Stored in another order, read in other batch sizes: the same choice.
    reordered = write_partition(
        tmp_path / "reordered.parquet", trace_rows(SIZES)[::-1], row_group_size=7
    )
    assert select(reordered, 30, read_rows=5) == first
    previous = first
    for budget in (31, 45, 80, 172, 500):
        larger = select(partition, budget)
        assert previous.judged <= larger.judged and previous.noise <= larger.noise
        previous = larger
    assert len(previous.judged) == sum(SIZES.values())  # a budget beyond the day judges all of it


def test_a_target_half_width_sizes_each_stratum_from_its_spread_and_the_budget_still_caps(
    partition,
):
    target = HalfWidthTarget(half_width=0.1, spread={"docs/en": 0.3, "docs/es": 0.1}, pooled=0.2)
    sized = select(partition, 500, floor=5, target=target)
    # n = ceil((1.96 sd / h)²): 35 for sd 0.3, 4 -> the floor 5 for sd 0.1, 16 (pooled) capped by
    # the day's 9 and 3.
    assert {s.stratum: (s.wanted, s.judged) for s in sized.counts.strata} == {
        "docs/en": (35, 35),
        "docs/es": (5, 5),
        "billing/es": (16, 9),
        "agent/en": (16, 3),
    }
    assert sized.counts.target_half_width == 0.1 and sized.counts.judged == 52
    capped = select(partition, 30, floor=5, target=target)
    assert capped.counts.judged == 30 and capped.judged <= sized.judged
    assert {s.stratum: s.judged for s in capped.counts.strata}["docs/en"] > 10


def test_noise_share_rounds_up_exactly_and_zero_means_none():
    assert noise_count(30, 0.1) == 3 and noise_count(4, 0.25) == 1 and noise_count(3, 0.25) == 1
    assert noise_count(0, 0.5) == 0 and noise_count(9, 0.0) == 0 and noise_count(7, 1.0) == 7


def test_the_selection_reads_only_three_columns_and_the_judged_rows_by_id(partition, tmp_path):
    """A partition whose other columns are unreadable (their bytes overwritten): the selection still
    works."""
    broken = tmp_path / "broken.parquet"
    shutil.copy(partition, broken)
    metadata = pq.ParquetFile(partition).metadata
    data = bytearray(broken.read_bytes())
    for g in range(metadata.num_row_groups):
        for c in range(metadata.num_columns):
            column = metadata.row_group(g).column(c)
            if column.path_in_schema.split(".")[0] not in SELECTION_COLUMNS:
                start = column.dictionary_page_offset or column.data_page_offset
                data[start : start + column.total_compressed_size] = (
                    b"\xff" * column.total_compressed_size
                )
    broken.write_bytes(bytes(data))
    with pytest.raises(OSError):
        pq.read_table(broken)
    assert select(broken, 40) == select(partition, 40)

    chosen = select(partition, 40)
    rows = list(read_judged([partition], chosen.judged, read_rows=16))
    assert sorted(r["trace_id"] for r in rows) == sorted(chosen.judged)
    assert set(rows[0]) == set(JUDGED_COLUMNS)


# --- end to end -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    home = tmp_path_factory.mktemp("online")
    settings = Settings(home=home / "home", anonymizer_key="k")
    shutil.copytree(ROOT / "tests" / "data" / "corpus", home / "corpus")
    index_corpus(settings, home / "corpus")
    with open_corpus_index(settings) as index:
        chunks = [(c.chunk_id, c.text) for c in index.chunks()][:6]
    return settings, chunks


def publish_day(settings, chunks, sizes, day=DAY):
    partition = Workspace.from_settings(settings).traces_partition(day)
    write_partition(partition.part(0), trace_rows(sizes, chunks))
    partition.manifest.write_text(json.dumps({"day": day.isoformat()}))


SMALL_DAY = {("docs", "en"): 14, ("docs", "es"): 6, ("billing", "es"): 2}


def test_the_online_eval_judges_its_budget_in_batches_and_reports_it(indexed):
    settings, chunks = indexed
    publish_day(settings, chunks, SMALL_DAY)
    release_golden(Workspace.from_settings(settings))
    params = online_params(
        settings, max_traces=12, min_per_stratum=3, noise_share=0.25, batch_size=5
    )
    summary = run_online_eval(settings, DAY, params, push=False)
    assert summary.items == 12 and summary.day_traces == 22
    strata = {s.stratum: s for s in summary.judged_strata}
    assert {s: (r.day_traces, r.judged, r.noise) for s, r in strata.items()} == {
        "billing/es": (2, 2, 1),
        "docs/en": (14, 7, 2),
        "docs/es": (6, 3, 1),
    }
    assert all(
        r.faithfulness_n == r.judged and r.faithfulness_half_width > 0 for r in strata.values()
    )
    run = RunPaths(Workspace.from_settings(settings).run_folder("online", DAY, "production").root)
    assert [p.name for p in run.score_files] == [
        f"scores-{judge_part(s)}.jsonl" for s in (0, 5, 10)
    ]
    store = ResultsStore.from_settings(settings)
    scores = store.scores(summary.run_id)
    stored_run = store.get_run(summary.run_id)
    store.dispose()
    by_metric = Counter(s.metric for s in scores)
    assert by_metric["faithfulness"] == by_metric["tool_call_validity"] == 12
    assert (
        by_metric["noise_delta_f_reference"] == by_metric["noise_delta_f_control"] == 4
    )  # the noise share only
    assert stored_run.params["selection"]["judged"] == 12 and stored_run.params["max_traces"] == 12
    report = summary.report and open(summary.report, encoding="utf-8").read()
    assert "Judged traces" in report and "sample held 22 traces; 12 were judged" in report
    # The offline backend's calls are counted as requests too (no tokens: it reports no usage).
    assert stored_run.cost == summary.cost.model_dump() and summary.cost.items == 12
    assert (
        summary.cost.by_stage()["judge"]["requests"]
        == sum(r.requests for r in summary.cost.rows if r.stage == "judge")
        > 0
    )
    assert (
        "Cost of this run" in report
        and f"{summary.cost.total('requests'):,} requests sent" in report
    )
    # The golden coverage of the whole day (not only the judged budget), stored with the run and in
    # the report.
    coverage = summary.coverage
    assert coverage.status == "ok" and coverage.day.questions == coverage.day.day_traces == 22
    assert stored_run.params["coverage"] == coverage.model_dump(mode="json")
    assert (
        "Does the golden set cover what users ask?" in report
        and "golden coverage of the day" in report
    )
    # "How do I restart service N of docs?" is no golden topic: one topic per language, queued for
    # review.
    assert {c.language: c.questions for c in coverage.clusters} == {"en": 14, "es": 8}
    assert Workspace.from_settings(settings).uncovered_topics(DAY).exists()

    # The next day, sized for ±0.05 from this run's spread: each stratum asks for what its spread
    # needs.
    later = date(2026, 3, 2)
    publish_day(settings, chunks, SMALL_DAY, later)
    target = past_spread(settings, later, 0.05)
    assert target is not None and set(target.spread) == set(strata)
    prepared = prepare_online_eval(
        settings, later, params.model_copy(update={"target_half_width": 0.05})
    )
    selection = json.loads((prepared.run_dir / "run.json").read_text())["selection"]
    assert selection["target_half_width"] == 0.05
    assert [s["wanted"] for s in selection["strata"]] == [
        target.wanted(s["stratum"], 3) for s in selection["strata"]
    ]
    assert (
        past_spread(settings, DAY, 0.05) is None
    )  # nothing before the first day: the budget alone


def test_a_cleared_batch_rerun_with_the_cache_on_sends_no_request(indexed):
    from pipelines.models.simulator import SimulatorKnobs, running_simulator, served_stats
    from pipelines.cli.prompt_catalog import all_prompts

    settings, chunks = indexed
    publish_day(settings, chunks, SMALL_DAY)
    # No retest: this test counts the eval's own stages exactly (a rerun replays the retest too: see
    # test_the_retest_is_sent_past_the_cache_and_changes_no_score).
    params = online_params(
        settings,
        max_traces=8,
        min_per_stratum=2,
        noise_share=0.5,
        batch_size=4,
        judge_retest_share=0,
    )
    with running_simulator(SimulatorKnobs(capacity=8), prompts=all_prompts()) as url:
        online = on_simulator(settings, url)

        def stats() -> dict:
            return served_stats(url)

        def requests() -> int:
            return stats()["requests"]

        prepared = prepare_online_eval(online, DAY, params)
        assert prepared.batches == [(0, 4), (4, 8)]
        run = RunPaths(prepared.run_dir)
        first = [
            judge_online_batch(online, prepared.run_dir, start, end)
            for start, end in prepared.batches
        ]
        sent = requests()
        assert sent == sum(b.judge["calls"] + b.generator["calls"] for b in first) > 0
        assert all(
            b.generator["calls"] > 0 for b in first
        )  # every batch holds noise traces (a share of 0.5)
        # Each batch recorded what it sent per stage and metric; together, exactly what the server
        # saw, per model too.
        recorded = [read_usage(run.usage(judge_part(start))) for start, _ in prepared.batches]
        rows = [row for batch in recorded for row in batch]
        assert sum(row.requests for row in rows) == sent
        arms = ("noise_clean", "noise_noisy", "noise_control")
        always = {
            ("judge", "faithfulness", "judge"),
            ("judge", "answer_relevancy", "judge"),
            *((arm, "answer", "generator") for arm in arms),
        }
        # An arm's answer is judged unless it abstains (the simulator's do here: nothing to check).
        assert (
            always
            <= {(r.stage, r.metric, r.role) for r in rows}
            <= always | {(arm, "faithfulness", "judge") for arm in arms}
        )
        assert {
            m: sum(r.requests for r in rows if r.model == m) for m in ("judge-model", "gen-model")
        } == stats()["models"]
        assert sum(r.prompt_tokens for r in rows) == stats()["prompt_tokens"]
        assert sum(r.completion_tokens for r in rows) == stats()["completion_tokens"]
        assert all(r.llm_seconds > 0 for r in rows if r.requests)
        scores = run.scores(judge_part(4))
        written = scores.read_text()
        scores.unlink()  # the batch is cleared (or failed): Airflow runs it again
        again = judge_online_batch(online, prepared.run_dir, 4, 8)
        assert requests() == sent and again.judge["calls"] == again.generator["calls"] == 0
        assert again.judge["cache_hits"] > 0 and scores.read_text() == written
        rerun = read_usage(
            run.usage(judge_part(4))
        )  # replaced: what the rerun sent (nothing) and found in the cache
        # (A call the first run found in the cache already, an arm's request that another arm had
        # just sent, is a hit both times: calls = requests + hits, none retried.)
        assert [(r.key, r.requests, r.cache_hits) for r in rerun] == [
            (r.key, 0, r.requests + r.cache_hits) for r in recorded[1]
        ]
        # The whole day again, prepare included: the same traces, nothing sent, every call a cache
        # hit.
        summary = run_online_eval(online, DAY, params, push=False)
        assert requests() == sent and summary.items == 8
        calls = sum(r.requests + r.cache_hits for r in rows)
        assert summary.cost.total("requests") == 0 and summary.cost.total("cache_hits") == calls
        assert finalize_online_eval(online, prepared.run_dir).items == 8
        # Each run of the day replaced the one before it: one online run, each score once (a DAG
        # rerun's case).
        store = ResultsStore.from_settings(online)
        [stored] = [r for r in store.runs("online", limit=10) if r.logical_date == DAY]
        scores = store.scores(stored.run_id)
        store.dispose()
        assert scores and len({(s.item_id, s.metric) for s in scores}) == len(scores)


@pytest.mark.services
def test_a_batch_judged_on_one_worker_and_rerun_on_another_sends_no_request(
    indexed, postgres, tmp_path
):
    """Two workers: their own RAGWATCH_HOME each, one data workspace and one LLM cache
    (RAGWATCH_LLM_CACHE_URL). Worker B's Qdrant is a copy of A's, standing in for the Qdrant server
    a deployment shares."""
    from pipelines.models.simulator import SimulatorKnobs, running_simulator, served_stats
    from pipelines.cli.prompt_catalog import all_prompts

    settings, chunks = indexed
    day = date(2026, 3, 7)
    publish_day(settings, chunks, SMALL_DAY, day)
    params = online_params(
        settings,
        max_traces=6,
        min_per_stratum=2,
        noise_share=0.5,
        batch_size=3,
        judge_retest_share=0,
    )  # counts the eval's own requests per batch
    cache_url = fresh_database(postgres, "llm_cache")
    shutil.copytree(settings.resolved_qdrant_path, tmp_path / "b" / "qdrant")
    with running_simulator(SimulatorKnobs(capacity=8), prompts=all_prompts()) as url:
        shared = {
            "llm_cache_url": cache_url,
            "workspace": settings.resolved_workspace,
            "anonymizer_key": "k",
        }
        worker_a = on_simulator(settings, url, **shared)
        worker_b = on_simulator(
            Settings(home=tmp_path / "b", generator=settings.generator, judge=settings.judge),
            url,
            **shared,
        )

        def requests() -> int:
            return served_stats(url)["requests"]

        prepared = prepare_online_eval(worker_a, day, params)
        assert prepared.batches == [(0, 3), (3, 6)]
        first = [
            judge_online_batch(worker_a, prepared.run_dir, start, end)
            for start, end in prepared.batches
        ]
        sent = requests()
        assert sent == sum(b.judge["calls"] + b.generator["calls"] for b in first) > 0
        assert all(b.generator["calls"] > 0 for b in first)
        scores = RunPaths(prepared.run_dir).scores(judge_part(3))
        written = scores.read_text()
        scores.unlink()  # cleared in the UI: Celery runs it again, this time on worker B
        again = judge_online_batch(worker_b, prepared.run_dir, 3, 6)
        assert requests() == sent and again.judge["calls"] == again.generator["calls"] == 0
        assert again.judge["cache_hits"] > 0 and again.generator["cache_hits"] > 0
        assert scores.read_text() == written
    # B kept no local cache: what it found, A had stored in PostgreSQL. (A's home is the module's,
    # where other tests' local caches live.)
    assert not worker_b.home.joinpath("cache", "llm").exists()
    assert SharedLLMCache(cache_url).count() == sent


def test_a_lost_score_file_fails_the_online_finalize_naming_its_batch(indexed):
    settings, chunks = indexed
    day = date(2026, 3, 5)
    publish_day(settings, chunks, SMALL_DAY, day)
    params = online_params(settings, max_traces=6, min_per_stratum=2, noise_share=0.0, batch_size=3)
    prepared = prepare_online_eval(settings, day, params)
    assert prepared.batches == [(0, 3), (3, 6)]
    judge_online_batch(
        settings, prepared.run_dir, 3, 6
    )  # the first batch ran on a worker that lost its file
    with pytest.raises(IncompleteHandoff) as raised:
        finalize_online_eval(settings, prepared.run_dir)
    message = str(raised.value)
    assert f"missing 1: batch 0-2 (map index 0) (scores-{judge_part(0)}.jsonl)" in message
    assert "rerun the online_eval `judge` task" in message


def test_the_cli_judges_the_budget_it_is_given_and_refuses_a_bad_one(indexed, monkeypatch):
    from typer.testing import CliRunner

    from pipelines.cli import app

    settings, chunks = indexed
    publish_day(settings, chunks, SMALL_DAY)
    monkeypatch.setenv("RAGWATCH_HOME", str(settings.home))
    monkeypatch.setenv("RAGWATCH_ANONYMIZER_KEY", "k")
    monkeypatch.setenv("RAGWATCH_JUDGE_RETEST_SHARE", "1")
    run = CliRunner().invoke(
        app,
        [
            "eval",
            "online",
            "--date",
            str(DAY),
            "--max-traces",
            "6",
            "--noise-share",
            "0.5",
            "--no-push",
        ],
        terminal_width=200,
    )
    assert run.exit_code == 0, run.output
    assert (
        "judged 6 of the day's 22 sampled traces (budget 6)" in run.output
        and "docs/en" in run.output
    )
    # Every trace retested, but 6 are too few for a figure: the summary says so instead of printing
    # numbers.
    printed = " ".join(run.output.split())  # the console wraps long lines
    assert (
        "judge noise on faithfulness (test-retest, n = 6 items judged twice): not enough retests"
        in printed
    )
    bad = CliRunner().invoke(
        app, ["eval", "online", "--date", str(DAY), "--target-half-width", "1.5"]
    )
    assert bad.exit_code != 0 and "--target-half-width: Input should be less than 1" in bad.output


def test_the_retest_is_sent_past_the_cache_and_changes_no_score(indexed):
    """The same day judged without and then with a retest of every trace, on the simulator with the
    cache on: the retest's requests reach the server (the first judgements come from the cache,
    never the retest's), count under `judge_retest`, and no score, aggregate or interval moves; the
    second judgements land in the retest files only; a rerun replays the retest."""
    from pipelines.models.simulator import SimulatorKnobs, running_simulator, served_stats
    from pipelines.cli.prompt_catalog import all_prompts

    settings, chunks = indexed
    day = date(2026, 3, 9)
    publish_day(settings, chunks, SMALL_DAY, day)
    params = online_params(
        settings, max_traces=12, min_per_stratum=3, noise_share=0.0, batch_size=6
    )
    with running_simulator(SimulatorKnobs(capacity=8), prompts=all_prompts()) as url:
        online = on_simulator(settings, url)

        def stored_scores(run_id: str) -> list[tuple]:
            store = ResultsStore.from_settings(online)
            try:
                return sorted(
                    (s.item_id, s.metric, s.status, s.value) for s in store.scores(run_id)
                )
            finally:
                store.dispose()

        plain = run_online_eval(
            online, day, params.model_copy(update={"judge_retest_share": 0.0}), push=False
        )
        plain_scores, before = stored_scores(plain.run_id), served_stats(url)["requests"]
        assert "judge_retest" not in plain.cost.by_stage() and plain.judge_noise == []
        retested = run_online_eval(
            online, day, params.model_copy(update={"judge_retest_share": 1.0}), push=False
        )
        sent = served_stats(url)["requests"] - before
        # A rerun of the day replays the retest from its own cache namespace: nothing sent, the same
        # judge noise.
        rerun = run_online_eval(
            online, day, params.model_copy(update={"judge_retest_share": 1.0}), push=False
        )
        assert (
            served_stats(url)["requests"] - before == sent
            and rerun.judge_noise == retested.judge_noise
        )
    stages = retested.cost.by_stage()
    assert (
        stages["judge"]["requests"] == 0 and stages["judge"]["cache_hits"] > 0
    )  # the first judgement: cached
    # Sent past the first judgement's cache entries (two traces asking the same thing share a retest
    # reply).
    assert sent == stages["judge_retest"]["requests"] > stages["judge_retest"]["cache_hits"]
    assert stored_scores(retested.run_id) == plain_scores and retested.overall == plain.overall
    run = RunPaths(Workspace.from_settings(online).run_folder("online", day, "production").root)
    second = [
        json.loads(line) for path in run.retest_files for line in path.read_text().splitlines()
    ]
    assert {(r["item_id"], r["metric"]) for r in second} == {
        (i, m) for i, m, *_ in plain_scores if m in ("faithfulness", "answer_relevancy")
    }
    noise = {row.metric: row for row in retested.judge_noise}
    faithfulness, relevancy = noise["faithfulness"], noise["answer_relevancy"]
    ok = Counter(m for _, m, status, _ in plain_scores if status == "ok")
    assert (
        (faithfulness.n_retested, relevancy.n_retested)
        == (ok["faithfulness"], ok["answer_relevancy"])
        >= (10, 10)
    )
    # Faithfulness' prompts are greedy (temperature 0): the simulator, like a deterministic server,
    # agrees with itself.
    assert (
        faithfulness.judge_variance,
        faithfulness.mean_abs_difference,
        faithfulness.noise_share,
    ) == (0, 0, 0)
    assert faithfulness.verdict_agreement == 1 and "same score twice" in faithfulness.verdict
    # Answer relevancy samples its questions (0.3): the retest's seed draws other ones, so its
    # scores move.
    assert (
        relevancy.judge_variance > 0
        and relevancy.mean_abs_difference > 0
        and relevancy.noise_share > 0
    )
    report = open(retested.report, encoding="utf-8").read()
    assert "Judge noise (test-retest)" in report and str(escape(relevancy.verdict)) in report

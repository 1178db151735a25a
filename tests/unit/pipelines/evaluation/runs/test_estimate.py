"""`--dry-run`: an eval's requests and tokens estimated before anything is spent, within ±20 % of
what the run then records, sending nothing and writing nothing. Against the LLM simulator over HTTP:
one day is run, the next day is dry-run, then run, and the two are compared; a rerun of that day is
estimated (and found) free."""

from __future__ import annotations

import json
import shutil
from datetime import date

import pytest

from pipelines.cli.prompt_catalog import all_prompts
from pipelines.core.workspace import Workspace
from pipelines.evaluation.outputs.cost_trend import weekly_cost
from pipelines.evaluation.results.run import RunCost
from pipelines.evaluation.runs.estimate import estimate_online
from pipelines.evaluation.runs.online import run_online_eval
from pipelines.evaluation.runs.params import online_params
from pipelines.models.simulator import SimulatorKnobs, running_simulator, served_stats
from pipelines.stores.results import ResultsStore
from tests.support.simulated import on_simulator
from tests.unit.pipelines.evaluation.runs.test_online import indexed, trace_rows, write_partition  # noqa: F401 (a fixture)

FIRST, SECOND = date(2026, 4, 1), date(2026, 4, 2)
SIZES = {("docs", "en"): 30, ("docs", "es"): 12, ("billing", "es"): 6}
PARAMS = dict(max_traces=24, min_per_stratum=4, noise_share=0.25, batch_size=8)


def publish(settings, chunks, day: date) -> None:
    """A day of traces of its own: ids, questions and answers name the day, so no request repeats
    another day's (answer relevancy asks about the answer alone: a repeated answer would be a cache
    hit)."""
    rows = [
        {
            **row,
            "trace_id": f"{day}-{row['trace_id']}",
            "question": f"{row['question']} ({day})",
            "answer": f"{row['answer']} ({day})",
        }
        for row in trace_rows(SIZES, chunks)
    ]
    partition = Workspace.from_settings(settings).traces_partition(day)
    write_partition(partition.part(0), rows)
    partition.manifest.write_text(json.dumps({"day": day.isoformat()}))


def files(root) -> dict[str, tuple[int, int]]:
    return {
        str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()
    }


def near(estimated: float, recorded: float) -> bool:
    return recorded > 0 and abs(estimated - recorded) <= 0.2 * recorded


def test_a_dry_run_estimates_the_next_day_within_20_percent_and_sends_and_writes_nothing(
    indexed,  # noqa: F811
    monkeypatch,
):
    from typer.testing import CliRunner

    from pipelines.cli import app

    settings, chunks = indexed
    for day in (FIRST, SECOND):
        publish(settings, chunks, day)
    params = online_params(settings, **PARAMS)
    with running_simulator(SimulatorKnobs(capacity=8), prompts=all_prompts()) as url:
        online = on_simulator(settings, url)
        before = files(settings.home)
        first = estimate_online(online, FIRST, params)
        assert files(settings.home) == before  # not even an empty results DB
        # No past run: the judge's fixed shape for the requests, tokens unknown.
        assert first.history == [] and first.total("prompt_tokens") is None
        assert (
            first.total("requests")
            == 3 * first.units["judged traces"] + 5 * first.units["noise traces"]
        )
        run_online_eval(online, FIRST, params, push=False)

        before, served = files(settings.home), served_stats(url)["requests"]
        estimate = estimate_online(online, SECOND, params)
        for name, value in {
            "RAGWATCH_HOME": str(settings.home),
            "RAGWATCH_ANONYMIZER_KEY": "k",
            "RAGWATCH_LLM_BACKEND": "openai",
            "RAGWATCH_ONLINE_MIN_PER_STRATUM": str(PARAMS["min_per_stratum"]),
        }.items():
            monkeypatch.setenv(name, value)
        for role, model in (("GENERATOR", "gen-model"), ("JUDGE", "judge-model")):
            monkeypatch.setenv(f"RAGWATCH_{role}__BASE_URL", url)
            monkeypatch.setenv(f"RAGWATCH_{role}__MODEL", model)
        shown = CliRunner().invoke(
            app,
            ["eval", "online", "--date", str(SECOND), "--max-traces", "24", "--dry-run"],
            terminal_width=250,
        )
        # Nothing sent, nothing written.
        assert served_stats(url)["requests"] == served and files(settings.home) == before

        summary = run_online_eval(online, SECOND, params, push=False)
        rerun = estimate_online(online, SECOND, params)
        again = run_online_eval(online, SECOND, params, push=False)
    assert shown.exit_code == 0, shown.output
    printed = " ".join(shown.output.split())  # lines wrap at the console's width
    # Not a terminal: the table is plain text, a grid or (narrower than its columns) one block per
    # row.
    lines = shown.output.splitlines()
    at = next(i for i, line in enumerate(lines) if line.split()[:1] == ["total"])
    total = (
        " ".join(lines[at : at + 2]).replace("requests:", "").split()
    )  # the row, or its block's first line
    assert (
        "nothing sent, nothing written" in printed
        and f"{round(estimate.total('requests')):,}" in total
    ), printed
    assert not set("│─┃━") & set(shown.output)
    assert (
        estimate.history == [f"online/{FIRST}/production"]
        and estimate.units["judged traces"] == summary.items
    )
    recorded = summary.cost
    for count in ("requests", "prompt_tokens", "completion_tokens"):
        assert near(estimate.total(count), recorded.total(count)), (
            count,
            estimate.total(count),
            recorded.total(count),
        )
    judge = recorded.by_stage()["judge"]["requests"]
    assert near(sum(r.requests for r in estimate.rows if r.stage == "judge"), judge)
    # The same day again: every trace was judged already, so every call is a cache hit, as the rerun
    # then finds.
    assert rerun.cached_units == rerun.units and rerun.total("requests") == 0 == again.cost.total(
        "requests"
    )
    assert again.cost.total("cache_hits") == pytest.approx(rerun.total("cache_hits"), rel=0.2)

    # Week by week: both days fall in the ISO week of Monday 30 March (the rerun replaced the second
    # day's run).
    store = ResultsStore.from_settings(settings)
    [*empty, week] = weekly_cost(store, "online", "production", until=SECOND, weeks=3)
    first_cost = RunCost.model_validate(store.get_run(f"online/{FIRST}/production").cost)
    store.dispose()
    assert [w.runs for w in empty] == [0, 0] and week.week == date(2026, 3, 30) and week.runs == 2
    assert week.requests == first_cost.total("requests") + 0 and week.items == 2 * summary.items
    assert week.tokens == first_cost.total("prompt_tokens") + first_cost.total("completion_tokens")
    report = open(again.report, encoding="utf-8").read()
    assert "Cost week by week" in report and '<td>2026-03-30</td><td class="num">2</td>' in report
    shown = CliRunner().invoke(
        app, ["eval", "cost", "--date", str(SECOND), "--weeks", "2"], terminal_width=200
    )
    assert (
        shown.exit_code == 0
        and "2026-03-30" in shown.output
        and f"{week.requests:,}" in shown.output
    ), shown.output


def test_a_golden_dry_run_is_within_20_percent_of_the_next_build_and_sends_and_writes_nothing(
    settings, tmp_path
):
    from pipelines.corpus.steps import index_corpus
    from pipelines.golden import steps
    from pipelines.golden.estimate import estimate_build
    from pipelines.golden.params import load_golden_params
    from tests.unit.pipelines.golden.test_steps import CORPUS, DAY, SMALL

    shutil.copytree(CORPUS, tmp_path / "corpus")
    index_corpus(settings, tmp_path / "corpus")
    params = load_golden_params(settings, **SMALL)
    with running_simulator(SimulatorKnobs(capacity=8), prompts=all_prompts()) as url:
        served = lambda: served_stats(url)["requests"]  # noqa: E731
        online = on_simulator(settings, url, cache=False)
        first = estimate_build(online, params, logical_date=DAY)
        assert (
            first.history == []
            and first.total("requests") is None
            and first.units["generation jobs"] > 0
        )
        steps.build_golden(online, params, logical_date=DAY)
        before, sent = files(settings.home), served()
        estimate = estimate_build(online, params, logical_date=DAY)
        assert served() == sent and files(settings.home) == before  # nothing sent, nothing written
        # The next build (plan, generate, filter: what costs model requests), with the cache off:
        # every job is sent.
        plan = steps.plan_golden(online, params, logical_date=DAY)
        steps.generate_golden(online, params.name, plan.batches)
        cost = steps.filter_golden(online, params).cost
    assert (
        estimate.history == [f"golden/{params.name}/v1"]
        and estimate.units["generation jobs"] == plan.jobs
    )
    assert estimate.cached_units == {"generation jobs": 0}  # the cache is off
    for role, stage in (("generator", "golden_generate"), ("judge", "golden_filter")):
        [row] = [r for r in estimate.rows if r.stage == stage]
        for count in ("requests", "prompt_tokens", "completion_tokens"):
            assert near(getattr(row, count), cost[role][count]), (
                role,
                count,
                getattr(row, count),
                cost[role][count],
            )

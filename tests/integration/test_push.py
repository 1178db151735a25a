"""Pushing to a real Pushgateway (tests/support/services.py) and the textfile fallback."""

from __future__ import annotations

import uuid
from datetime import date, datetime, timezone

import pytest

from pipelines.core.records import Score
from pipelines.evaluation.outputs.push import push_run, push_scores, read_back, textfile_path
from pipelines.evaluation.outputs.summary import RunSummary
from pipelines.evaluation.statistics.aggregates import Aggregate
from pipelines.stores.results import EvalRun, ResultsStore, run_id
from tests.support.services import free_port

pytestmark = pytest.mark.services

WHEN = datetime(2026, 3, 3, 6, 0, tzinfo=timezone.utc)


def agg(metric: str, stratum: str, mean: float | None, n: int = 40, n_failed: int = 0) -> Aggregate:
    return Aggregate(metric, stratum, n, n_failed, 0, mean, None, None, None)


AGGREGATES = [
    agg("faithfulness", "all", 0.82, n_failed=2),
    agg("faithfulness", "single_hop/es", 0.9, n=20, n_failed=1),
    agg("recall@5", "all", 0.7),
    agg("context_recall", "all", None, n=0, n_failed=40),  # every judge call failed
]


@pytest.fixture
def gateway_settings(settings, pushgateway):
    # A job of its own per test: groups of other tests never leak into the assertions.
    job = f"t{uuid.uuid4().hex[:8]}"
    return settings.model_copy(update={"pushgateway_url": pushgateway.url, "pushgateway_job": job})


def groups_of(settings) -> list[dict]:
    return [
        g
        for g in read_back(settings.pushgateway_url)
        if g["labels"]["job"] == settings.pushgateway_job
    ]


def samples(group: dict, name: str) -> dict[tuple, float]:
    return {
        tuple(sorted((k, v) for k, v in m["labels"].items() if k not in ("job", "instance"))): m[
            "value"
        ]
        for m in group["metrics"].get(name, [])
    }


def test_push_sends_gauges_per_suite_and_stratum_without_a_run_id(gateway_settings):
    result = push_scores(
        gateway_settings, AGGREGATES, suite="offline", gate_passed=True, succeeded_at=WHEN
    )
    assert result.ok and result.mode == "pushgateway" and result.error is None
    assert result.grouping_key == {"suite": "offline"}
    [group] = groups_of(gateway_settings)
    assert group["labels"] == {
        "job": gateway_settings.pushgateway_job,
        "suite": "offline",
    }  # job + suite, no run id
    assert samples(group, "rag_faithfulness_score") == {
        (("stratum", "all"), ("suite", "offline")): 0.82,
        (("stratum", "single_hop/es"), ("suite", "offline")): 0.9,
    }
    assert samples(group, "rag_recall_at_5_score") == {
        (("stratum", "all"), ("suite", "offline")): 0.7
    }
    assert "rag_context_recall_score" not in group["metrics"]  # no ok score: absent, never 0
    items, failed = samples(group, "rag_eval_items"), samples(group, "rag_eval_failed_items")
    key = (("metric", "context_recall"), ("stratum", "all"), ("suite", "offline"))
    assert items[key] == 40 and failed[key] == 40
    assert items[(("metric", "faithfulness"), ("stratum", "all"), ("suite", "offline"))] == 42
    assert samples(group, "rag_eval_gate_passed") == {(("suite", "offline"),): 1.0}
    assert samples(group, "rag_eval_last_success_timestamp_seconds") == {
        (("suite", "offline"),): WHEN.timestamp()
    }
    assert not any(
        "run" in label
        for m in group["metrics"].values()
        if isinstance(m, list)
        for s in m
        for label in s["labels"]
    )


def test_a_second_push_of_the_same_suite_replaces_the_whole_group(gateway_settings):
    push_scores(gateway_settings, AGGREGATES, suite="offline", gate_passed=True, succeeded_at=WHEN)
    push_scores(
        gateway_settings, [agg("faithfulness", "all", 0.7)], suite="offline", gate_passed=False
    )
    push_scores(
        gateway_settings, [agg("faithfulness", "all", 0.95)], suite="online", app="docs-assistant"
    )
    groups = {tuple(sorted(g["labels"].items())): g for g in groups_of(gateway_settings)}
    job = gateway_settings.pushgateway_job
    assert set(groups) == {
        (("job", job), ("suite", "offline")),
        (("app", "docs-assistant"), ("job", job), ("suite", "online")),
    }
    offline = groups[(("job", job), ("suite", "offline"))]
    # The stratum and the metrics the new run lacks are gone, not left stale.
    assert samples(offline, "rag_faithfulness_score") == {
        (("stratum", "all"), ("suite", "offline")): 0.7
    }
    assert "rag_recall_at_5_score" not in offline["metrics"]
    assert samples(offline, "rag_eval_gate_passed") == {(("suite", "offline"),): 0.0}
    online = groups[(("app", "docs-assistant"), ("job", job), ("suite", "online"))]
    assert samples(online, "rag_faithfulness_score") == {
        (("app", "docs-assistant"), ("stratum", "all"), ("suite", "online")): 0.95
    }


def test_an_unreachable_gateway_is_a_failure_result_not_an_exception(settings, caplog):
    down = settings.model_copy(update={"pushgateway_url": f"http://127.0.0.1:{free_port()}"})
    result = push_scores(down, AGGREGATES, suite="offline", timeout_s=2)
    assert not result.ok and result.mode == "pushgateway"
    assert down.pushgateway_url in result.error and "refused" in result.error.lower()
    assert any(r.levelname == "ERROR" and "failed" in r.getMessage() for r in caplog.records)


def test_without_a_gateway_the_same_exposition_goes_to_a_textfile(settings):
    assert settings.pushgateway_url is None
    result = push_scores(settings, AGGREGATES, suite="offline", gate_passed=True, succeeded_at=WHEN)
    path = textfile_path(settings.home, "ragwatch", "offline")
    assert result.ok and result.mode == "textfile" and result.destination == str(path)
    assert path == settings.home.resolve() / "metrics" / "ragwatch-offline.prom"
    text = path.read_text()
    assert 'rag_faithfulness_score{stratum="single_hop/es",suite="offline"} 0.9' in text
    assert (
        'rag_eval_failed_items{metric="context_recall",stratum="all",suite="offline"} 40.0' in text
    )
    assert 'rag_eval_gate_passed{suite="offline"} 1.0' in text
    assert "rag_context_recall_score" not in text
    assert not list(path.parent.glob("*.tmp*"))


def saved_run(settings, day: date, target: str, faithfulness: float) -> RunSummary:
    """A finished offline run of `target` on `day`, saved in the results DB as the eval saves it."""
    store = ResultsStore.from_settings(settings)
    store.create()
    run = EvalRun(
        run_id=run_id("offline", day, target),
        suite="offline",
        logical_date=day,
        target=target,
        dataset_version="demo@v1",
        finished_at=datetime.combine(day, datetime.min.time(), timezone.utc),
    )
    scores = [
        Score(
            run_id=run.run_id,
            suite="offline",
            item_id=f"i{n}",
            stratum="single_hop/es",
            metric="faithfulness",
            value=faithfulness,
            status="ok",
            dataset_version="demo@v1",
        )
        for n in range(4)
    ]
    store.save_run(run, scores)
    store.dispose()
    return RunSummary(
        run_id=run.run_id,
        suite="offline",
        logical_date=day,
        target=target,
        dataset_version="demo@v1",
        items=4,
        report=None,
        gate_passed=None,
        gate="none",
        overall=[],
        diagnosis=[],
    )


def test_a_backfill_or_another_target_never_overwrites_the_newest_gauges_of_a_target(
    gateway_settings,
):
    february = saved_run(gateway_settings, date(2026, 2, 2), "reference-rag", 0.9)
    assert push_run(gateway_settings, february).samples > 0
    # A January run of a candidate URL, then a January backfill of the reference itself.
    candidate = saved_run(gateway_settings, date(2026, 1, 5), "rag.internal_v2", 0.4)
    assert push_run(gateway_settings, candidate).samples > 0
    backfill = saved_run(gateway_settings, date(2026, 1, 5), "reference-rag", 0.1)
    assert "newer" in push_run(gateway_settings, backfill).skipped
    groups = {g["labels"].get("target"): g for g in groups_of(gateway_settings)}
    assert set(groups) == {"reference-rag", "rag.internal_v2"}
    assert (
        samples(groups["reference-rag"], "rag_faithfulness_score")[
            (("stratum", "all"), ("suite", "offline"), ("target", "reference-rag"))
        ]
        == 0.9
    )
    assert (
        samples(groups["rag.internal_v2"], "rag_faithfulness_score")[
            (("stratum", "all"), ("suite", "offline"), ("target", "rag.internal_v2"))
        ]
        == 0.4
    )


def test_a_gateway_url_with_credentials_never_reaches_the_result_or_the_log(settings, caplog):
    down = settings.model_copy(
        update={"pushgateway_url": f"http://ops:gw-s3cret@127.0.0.1:{free_port()}"}
    )
    result = push_scores(down, AGGREGATES, suite="offline", target="reference-rag", timeout_s=2)
    assert not result.ok and "refused" in result.error.lower()
    assert "gw-s3cret" not in result.destination + result.error + caplog.text
    assert "ops:***@127.0.0.1" in result.destination


def test_the_briefs_context_precision_is_the_judged_share_of_useful_chunks():
    from pipelines.evaluation.outputs.push import CONTEXT_PRECISION, as_pushed

    # The judged share of useful chunks given is the brief's context precision, pushed as
    # rag_context_precision_score (alert < 0.60); id-based precision@k and ragas' rank-weighted
    # metric keep their own names.
    aggregates = [
        agg("precision@5", "all", 0.2),
        agg("context_precision_share", "all", 0.4),
        agg("context_precision_share", "tool/en", 0.2),
        agg("context_precision_ranked", "all", 0.97),
    ]
    assert [(a.metric, a.stratum, a.mean) for a in as_pushed(aggregates)] == [
        ("precision@5", "all", 0.2),
        (CONTEXT_PRECISION, "all", 0.4),
        (CONTEXT_PRECISION, "tool/en", 0.2),
        ("context_precision_ranked", "all", 0.97),
    ]


def test_a_runs_model_usage_is_pushed_per_stage_and_metric(settings):
    from pipelines.evaluation.results.run import RunCost
    from pipelines.models.usage import UsageRow

    cost = RunCost(
        items=10,
        rows=[
            UsageRow(
                stage="judge",
                metric="faithfulness",
                role="judge",
                model="j",
                requests=20,
                cache_hits=3,
                prompt_tokens=3000,
                completion_tokens=400,
                llm_seconds=12.5,
            ),
            UsageRow(
                stage="noise_noisy",
                metric="answer",
                role="generator",
                model="g",
                requests=4,
                prompt_tokens=800,
                completion_tokens=90,
                llm_seconds=2.0,
            ),
        ],
    )
    assert push_scores(settings, AGGREGATES, suite="online", succeeded_at=WHEN, cost=cost).ok
    text = textfile_path(settings.home, "ragwatch", "online").read_text()
    assert 'rag_eval_llm_requests{metric="faithfulness",stage="judge",suite="online"} 20.0' in text
    assert 'rag_eval_llm_cache_hits{metric="faithfulness",stage="judge",suite="online"} 3.0' in text
    assert (
        'rag_eval_llm_tokens{kind="prompt",metric="answer",stage="noise_noisy",suite="online"} 800.0'
        in text
    )
    assert (
        'rag_eval_llm_tokens{kind="completion",metric="faithfulness",stage="judge",suite="online"} 400.0'
        in text
    )
    assert 'rag_eval_llm_seconds{metric="answer",stage="noise_noisy",suite="online"} 2.0' in text


def test_judge_noise_is_pushed_per_metric_and_absent_with_too_few_retests(settings):
    from pipelines.evaluation.outputs.summary import JudgeNoiseRow

    rows = [
        JudgeNoiseRow(
            metric="answer_relevancy",
            n_retested=40,
            n_items=400,
            enough=True,
            icc=0.71,
            noise_share=0.25,
            verdict="item sampling dominates",
        ),
        JudgeNoiseRow(
            metric="faithfulness",
            n_retested=6,
            n_items=400,
            enough=False,
            verdict="not enough retests",
        ),
        JudgeNoiseRow(
            metric="context_recall",
            n_retested=40,
            n_items=400,
            enough=True,
            icc=None,
            noise_share=0.0,
            verdict="the judge gave the same score twice",
        ),
    ]
    assert push_scores(
        settings, AGGREGATES, suite="offline", succeeded_at=WHEN, judge_noise=rows
    ).ok
    text = textfile_path(settings.home, "ragwatch", "offline").read_text()
    assert 'rag_judge_noise_share{metric="answer_relevancy",suite="offline"} 0.25' in text
    assert 'rag_judge_retest_icc{metric="answer_relevancy",suite="offline"} 0.71' in text
    assert 'rag_judge_retest_items{metric="answer_relevancy",suite="offline"} 40.0' in text
    assert 'rag_judge_noise_share{metric="context_recall",suite="offline"} 0.0' in text
    # 6 retests: no figure, never a 0.
    assert not [
        line
        for line in text.splitlines()
        if line.startswith("rag_judge_") and 'metric="faithfulness"' in line
    ]
    assert 'rag_judge_retest_icc{metric="context_recall"' not in text  # ICC undefined: absent


def test_what_a_gate_pass_vouches_for_is_pushed_per_gated_metric(settings):
    summary = saved_run(settings, date(2026, 2, 2), "reference-rag", 0.9)
    store = ResultsStore.from_settings(settings)
    run = store.get_run(summary.run_id)
    stored = dict(
        design="paired",
        n_pairs=40,
        baseline_mean=0.9,
        candidate_mean=0.9,
        diff=0.0,
        ci_low=-0.05,
        ci_high=0.05,
        passed=True,
        reason="no drop",
    )  # what MetricGate.to_dict keeps, besides these
    run.gate_passed, run.gate = (
        True,
        {
            "metrics": [
                {**stored, "metric": "faithfulness", "detectable_drop": 0.17},
                {**stored, "metric": "tool_call_accuracy", "detectable_drop": None},
            ]
        },
    )
    store.save_run(run, store.scores(run.run_id))
    store.dispose()
    push_run(settings, summary)
    text = textfile_path(settings.home, "ragwatch", "offline", target="reference-rag").read_text()
    # The metric the gate could not vouch for (none stated) has no gauge: absent, never 0.
    assert [line for line in text.splitlines() if line.startswith("rag_eval_gate_catches{")] == [
        'rag_eval_gate_catches{metric="faithfulness",suite="offline",target="reference-rag"} 0.17'
    ]

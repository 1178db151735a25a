"""The last screen of `make demo`: one screen (≤ 60 lines at 100 columns) that says what ran, the
drill's verdict and why, coverage, judge trust and cost a line each, and where to click."""

from __future__ import annotations

import re
from datetime import date
from io import StringIO
from pathlib import Path

from rich.console import Console

from ragwatch_harness.cli.render.recap import MAX_LINES, WIDTH, recap_lines
from ragwatch_harness.demo.recap import (
    DemoRecap,
    DrillAlert,
    DrillAlerts,
    load_drill_alerts,
    save_drill_alerts,
)
from pipelines.evaluation.results.coverage import StratumCoverage
from pipelines.evaluation.results.coverage import GoldenCoverage, Representative, UncoveredCluster
from pipelines.evaluation.outputs.summary import GateRow, JudgeTrustRow, RunSummary
from pipelines.evaluation.results.run import RunCost
from pipelines.models.usage import UsageRow
from pipelines.core.settings import load_settings

DAY = date(2026, 12, 4)
# Where `make demo` writes them: below the folder it runs in, so the screen shows them relative to
# it.
HOME = str(Path.cwd() / ".ragwatch" / "workspace" / "reports")
METRICS = [
    "faithfulness",
    "answer_correctness",
    "answer_relevancy",
    "context_precision",
    "context_recall",
    "noise_sensitivity_relevant",
    "tool_call_validity",
]


def cost(requests: int) -> RunCost:
    return RunCost(
        items=60,
        rows=[
            UsageRow(
                stage="judge",
                metric=m,
                role="judge",
                model="judge-model",
                requests=requests,
                cache_hits=3,
                prompt_tokens=40_000,
                completion_tokens=9_000,
            )
            for m in METRICS
        ],
    )


def summary(suite: str, target: str, **fields) -> RunSummary:
    defaults = {
        "gate_passed": None,
        "gate": "no gate",
        "overall": [],
        "diagnosis": [],
        "cost": cost(140),
        "report": f"{HOME}/{suite}/{DAY}/{target}.html",
    }
    return RunSummary(
        run_id=f"{suite}/{DAY}/{target}",
        suite=suite,
        logical_date=DAY,
        target=target,
        dataset_version="v1",
        items=60,
        **{**defaults, **fields},
    )


def failing(metric: str, diff: float) -> GateRow:
    return GateRow(
        metric=metric,
        design="paired",
        n_pairs=60,
        baseline_mean=0.91,
        candidate_mean=0.91 + diff,
        diff=diff,
        ci_low=diff - 0.04,
        ci_high=diff + 0.04,
        ci_method="bca",
        p_adjusted=0.001,
        passed=False,
        reason="the mean dropped",
    )


def trust(metric: str, kappa: float) -> JudgeTrustRow:
    return JudgeTrustRow(
        metric=metric,
        meaning="is every claim supported",
        labels=40,
        kappa=kappa,
        half_width=0.05,
        trusted=kappa >= 0.6,
        verdict="trustworthy" if kappa >= 0.6 else "not trustworthy",
    )


def worst_case_recap() -> DemoRecap:
    """Every list at its longest: seven failing metrics, seven audited ones, long paths and
    topics."""
    coverage = GoldenCoverage(
        status="ok",
        golden="demo",
        golden_version="v1",
        max_questions=2000,
        strata=[
            StratumCoverage(
                stratum="all",
                day_traces=300,
                questions=180,
                covered=120,
                matched=0.6,
                ratio=0.667,
                ci_low=0.62,
                ci_high=0.71,
                level_ci_low=0.59,
                level_ci_high=0.74,
            )
        ],
        clusters=[
            UncoveredCluster(
                cluster_id=f"t{i}",
                language="en",
                questions=9,
                estimated_traces=30,
                share=0.1,
                gap_traces=30,
                gap_share=0.1,
                representatives=[
                    Representative(trace_id="x", app="docs", question="How do I " * 30)
                ],
            )
            for i in range(12)
        ],
    )
    drill = summary(
        "offline",
        "candidate-more-hallucination",
        baseline="offline/2026-12-04/reference-rag",
        gate_passed=False,
        gate="FAILED on 7 metrics",
        gate_rows=[failing(m, -0.12) for m in METRICS],
        judge_trust=[trust(m, 0.4 + 0.05 * i) for i, m in enumerate(METRICS)],
    )
    return DemoRecap(
        ran=[
            "trace_sampling for 2026-12-03: 288 of 300 traces sampled, 4 quarantined",
            "trace_sampling for 2026-12-04: 290 of 300 traces sampled, 0 quarantined",
            "golden_build: golden set demo v1: 180 items",
            "offline_eval: reference-rag on 60 items of v1",
            "regression drill: candidate-more-hallucination on the same items",
            "online_eval: 240 of the day's 290 sampled traces judged",
        ],
        baseline=summary("offline", "reference-rag"),
        drill=drill,
        online=summary("online", "production", coverage=coverage),
        alerts=DrillAlerts(
            "Prometheus at http://127.0.0.1:39091, stopped with the demo",
            [DrillAlert(f"Rag{m.title()}Low", "firing", "dropped") for m in METRICS],
        ),
        log=str(Path.cwd() / ".ragwatch" / "logs" / "demo.log"),
    )


def screen(recap: DemoRecap, width: int = WIDTH) -> list[str]:
    out = StringIO()
    console = Console(file=out, width=width, force_terminal=True, color_system="truecolor")
    for line in recap_lines(recap):
        console.print(line, soft_wrap=True, highlight=False)  # as `ragwatch demo recap` prints it
    return re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue()).splitlines()


def test_the_recap_fits_one_screen_of_100_columns_even_with_every_list_at_its_longest():
    lines = screen(worst_case_recap())
    assert len(lines) <= MAX_LINES == 60
    assert max(len(line) for line in lines) <= WIDTH, max(lines, key=len)


def test_the_recap_says_what_ran_the_verdict_and_why_the_three_figures_and_where_to_click():
    lines = screen(worst_case_recap())
    text = "\n".join(lines)
    assert "offline_eval: reference-rag on 60 items of v1" in text and "golden_build" in text
    assert (
        "FAILED: the candidate candidate-more-hallucination against offline/2026-12-04/reference-rag"
        in text
    )
    assert "  - faithfulness 0.910 → 0.790 (-0.120, 95 % CI [-0.160, -0.080], p 0.001)" in text
    assert "and 3 more metrics" in text
    assert "alerts firing: RagFaithfulnessLow" in text
    one_line = {
        label: [line for line in lines if line.startswith(label)]
        for label in ("coverage:", "judge trust:", "cost:")
    }
    assert all(len(found) == 1 for found in one_line.values()), one_line
    assert one_line["coverage:"][0] == (
        "coverage:    0.667 [0.590, 0.740] of 180 questions; 12 topics missed, the largest 10% of the day"
    )
    trust = one_line["judge trust:"][0]
    assert trust.startswith(
        "judge trust: 3/7 metrics trusted (κ ≥ 0.6, 20+ labels); not: faithfulness 0.40, "
    )
    assert trust.endswith(" more")  # the untrusted first, as many as fit, then how many more
    assert (
        one_line["cost:"][0]
        == "cost:        2,940 model requests (63 cached), 1.03 M tokens; offline 980, drill 980, online 980"
    )
    assert f".ragwatch/workspace/reports/offline/{DAY}/candidate-more-hallucination.html" in text
    assert "http://127.0.0.1:8080/ragwatch/" in text and "demo.log" in text


def test_the_coverage_line_says_how_its_threshold_was_set_and_the_designed_coverage():
    from dataclasses import replace

    from pipelines.evaluation.results.coverage import CoverageThreshold

    recap = worst_case_recap()
    learnt = CoverageThreshold(
        value=0.28, method="calibrated", tpr=1.0, fpr=0.05, positives=40, negatives=40
    )
    online = recap.online.model_copy(
        update={"coverage": recap.online.coverage.model_copy(update={"threshold": learnt})}
    )
    lines = screen(replace(recap, online=online, designed_coverage=0.7))
    below = lines[lines.index(next(line for line in lines if line.startswith("coverage:"))) + 1]
    assert below == (
        "             threshold calibrated on 40 user questions; the demo's designed coverage: 0.70"
    )
    mine = learnt.model_copy(update={"method": "setting"})
    online = recap.online.model_copy(
        update={"coverage": recap.online.coverage.model_copy(update={"threshold": mine})}
    )
    lines = screen(replace(recap, online=online))
    assert "             threshold: your setting, not calibrated" in lines


def test_a_path_longer_than_the_screen_gets_a_line_of_its_own_and_is_never_cut():
    recap = worst_case_recap()
    long_path = "/srv/" + "a-very-long-folder-name/" * 5 + "report.html"
    lines = screen(
        DemoRecap(
            ran=recap.ran,
            baseline=None,
            drill=recap.drill.model_copy(update={"report": long_path}),
            online=None,
            alerts=None,
        )
    )
    assert f"    {long_path}" in lines and "  drill report:" in lines


def test_the_cost_line_names_tokens_only_where_servers_reported_them():
    recap = worst_case_recap()
    no_tokens = RunCost(
        items=60,
        rows=[
            UsageRow(
                stage="judge", metric="faithfulness", role="judge", model="offline", requests=611
            )
        ],
    )
    runs = {
        name: getattr(recap, name).model_copy(update={"cost": no_tokens})
        for name in ("baseline", "drill", "online")
    }
    lines = screen(DemoRecap(ran=[], alerts=None, **runs))
    assert (
        "cost:        1,833 model requests (0 cached), no tokens reported; offline 611, drill 611, online 611"
        in lines
    )


def test_without_runs_the_recap_says_so_instead_of_failing():
    lines = screen(DemoRecap(ran=[], baseline=None, drill=None, online=None, alerts=None))
    text = "\n".join(lines)
    assert "nothing: no step left a record" in text and "no drill run in the results DB" in text
    assert (
        "coverage:    not measured (no online run)" in text and "cost:        not recorded" in text
    )


def test_the_drill_alerts_outlive_prometheus(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGWATCH_HOME", str(tmp_path))
    settings = load_settings()
    assert load_drill_alerts(settings) is None
    alerts = DrillAlerts(
        "recomputed from monitoring/rules/ragwatch.rules.yml: no Prometheus",
        [DrillAlert("RagEvalGateFailed", "would fire", "rag_eval_gate_passed 0 == 0")],
    )
    save_drill_alerts(settings, alerts)
    assert load_drill_alerts(settings) == alerts


def test_the_recap_reads_the_runs_the_demo_left_in_the_results_db(tmp_path, monkeypatch):
    from ragwatch_harness.demo.drill import CANDIDATE
    from ragwatch_harness.demo.recap import demo_recap
    from pipelines.evaluation.runs.params import REFERENCE_TARGET
    from pipelines.core.records import Score
    from pipelines.stores.results import EvalRun, ResultsStore, run_id

    monkeypatch.setenv("RAGWATCH_HOME", str(tmp_path))
    settings = load_settings()
    assert (
        demo_recap(settings, DAY).ran == []
    )  # nothing ran yet: no results DB, no sample, no golden set
    store = ResultsStore.from_settings(settings)
    store.create()
    for target, value in ((REFERENCE_TARGET, 0.9), (CANDIDATE, 0.6)):
        run = EvalRun(
            run_id=run_id("offline", DAY, target),
            suite="offline",
            logical_date=DAY,
            target=target,
            dataset_version="v1",
            report_path=f"reports/{target}.html",
        )
        store.save_run(
            run,
            [
                Score(
                    run_id=run.run_id,
                    suite="offline",
                    item_id=f"q{i}",
                    stratum="single_hop/en",
                    metric="faithfulness",
                    value=value,
                    status="ok",
                    dataset_version="v1",
                )
                for i in range(5)
            ],
        )
    store.dispose()
    recap = demo_recap(settings, DAY, log="demo.log")
    assert recap.ran == [
        f"offline_eval: {REFERENCE_TARGET} on 5 items of v1",
        f"regression drill: {CANDIDATE} on the same items",
    ]
    assert (
        recap.drill.target == CANDIDATE
        and recap.baseline.target == REFERENCE_TARGET
        and recap.online is None
    )
    assert recap.drill.report == "reports/candidate-more-hallucination.html"

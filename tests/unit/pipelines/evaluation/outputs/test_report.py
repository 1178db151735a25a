"""The HTML report: self-contained, escaped, Spanish-safe, with every section; and the DVC metrics
JSON."""

from __future__ import annotations

import json
import re
from datetime import date

import pytest

from pipelines.cli.render.console import console
from pipelines.cli.render.evals import print_coverage, print_eval_summary
from pipelines.core.records import Score
from pipelines.core.workspace import Workspace
from pipelines.evaluation.outputs.report import (
    ItemView,
    render_report,
    trend_from_store,
    write_metrics_json,
    write_report,
)
from pipelines.evaluation.outputs.summary import run_summary
from pipelines.evaluation.results.coverage import GoldenCoverage
from pipelines.evaluation.statistics.aggregates import aggregate
from pipelines.evaluation.statistics.gate.rule import regression_gate
from pipelines.stores.results import EvalRun, ResultsStore, run_id

DAY = date(2026, 3, 2)
HOSTILE = '<script>alert("x")</script> Reinicia el nodo con <b>systemctl</b> & espera'


def make_run(day: date) -> EvalRun:
    return EvalRun(
        run_id=run_id("offline", day, "prod"),
        suite="offline",
        logical_date=day,
        target="prod",
        dataset_version="golden-v3",
        judge_model="llama-70b-juez",
        generator_model="qwen-7b",
        params={"k": [5], "context_depth": 5},
    )


def make_scores(run: EvalRun, faithfulness: float) -> list[Score]:
    def s(item, stratum, metric, value, status="ok", error=None):
        return Score(
            run_id=run.run_id,
            suite="offline",
            item_id=item,
            stratum=stratum,
            metric=metric,
            value=value,
            status=status,
            error=error,
            dataset_version=run.dataset_version,
        )

    out = []
    for i in range(12):
        stratum = "single_hop/es" if i % 2 else "multi_hop/es"
        out.append(s(f"q{i}", stratum, "faithfulness", faithfulness if i % 3 else 0.2))
        out.append(
            s(f"q{i}", stratum, "context_precision_share", (0.4, 0.6, 0.8, 0.4)[i % 4])
        )  # mean 0.55: < 0.60
        out.append(s(f"q{i}", stratum, "recall@5", float(i % 4 != 0)))
    out.append(
        s("q0", "multi_hop/es", "context_recall", None, "failed", "respuesta no es JSON: <html>")
    )
    return out


@pytest.fixture
def rendered(tmp_path):
    store = ResultsStore(f"sqlite:///{tmp_path / 'results.db'}")
    store.create()
    past = [make_run(date(2026, 2, 16)), make_run(date(2026, 2, 23))]
    for run, value in zip(past, (0.9, 0.85)):
        store.save_run(run, make_scores(run, value))
    run = make_run(DAY)
    scores = make_scores(run, 0.7)
    baseline = store.baseline_for(run)
    gate = regression_gate(scores, store.scores(baseline.run_id), ["faithfulness", "recall@5"])
    items = {
        "q0": ItemView(
            "q0",
            "¿Cómo reinicio el nodo de Qdrant sin perder datos?",
            HOSTILE,
            [
                "chunk-1: Para reiniciar, ejecuta «systemctl restart qdrant».",
                "chunk-2: <i>ruido</i>",
            ],
            reference_answer="Con systemctl; los datos persisten en /var/lib/qdrant.",
            attribution="generation_failure",
        ),
        "q3": ItemView("q3", "¿Qué puerto usa?", "6333", attribution="retrieval_failure"),
        "q1": ItemView("q1", "¿Dónde están los logs?", "En journald.", attribution="ok"),
    }
    html = render_report(
        run, scores, items=items, trend=trend_from_store(store, run), gate=gate, baseline=baseline
    )
    store.dispose()
    return html, scores


def test_report_is_self_contained_utf8_html(rendered, tmp_path):
    html, _ = rendered
    assert html.startswith("<!DOCTYPE html>") and '<meta charset="utf-8">' in html
    assert not re.search(r"https?://", html)  # no external resource, no namespace URL either
    assert not re.search(r"<(script|link|img|iframe)\b", html, re.I)
    assert (
        "¿Cómo reinicio el nodo de Qdrant sin perder datos?" in html
        and "«systemctl restart qdrant»" in html
    )
    path = write_report(Workspace(tmp_path).report("offline", DAY, "prod"), html)
    assert path == tmp_path / "golden" / "reports" / "offline" / "2026-03-02_prod.html"
    assert path.read_bytes().decode("utf-8") == html


def test_text_from_models_and_documents_is_escaped(rendered):
    html, _ = rendered
    assert (
        "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; Reinicia el nodo con &lt;b&gt;systemctl&lt;/b&gt;"
        in html
    )
    assert "<script>" not in html and "&amp; espera" in html
    assert "&lt;i&gt;ruido&lt;/i&gt;" in html and "respuesta no es JSON: &lt;html&gt;" in html


def test_report_has_header_gate_diagnosis_tables_charts_trend_and_worst_items(rendered):
    html, _ = rendered
    for text in ("offline", "2026-03-02", "golden-v3", "llama-70b-juez", "qwen-7b", "prod"):
        assert text in html
    assert "FAILED" in html and "offline/2026-02-23/prod" in html  # gate against the previous run
    # Diagnosis: context precision (retrieval) before faithfulness, with the brief's wording.
    diagnosis = html[html.index("<h2>Diagnosis</h2>") :]
    assert diagnosis.index("contradictory answers") < diagnosis.index("made-up answers")
    assert "tune reranker, lower k, similarity cut-off" in html
    for stratum in ("single_hop/es", "multi_hop/es"):
        assert f"<td>{stratum}</td>" in html
    assert (
        html.count("<svg") == 1 + 3 + 4 + 4
    )  # the verdict's differences, CI charts (all + 2 strata), 4 histograms, 4 trends
    assert "2026-02-16" in html  # trend reaches back to the first run
    worst = html[html.index("Worst items") :]
    assert worst.index("<b>q0</b>") < worst.index("<b>q3</b>")  # q0 scored lowest
    assert "generation_failure" in html and "retrieval_failure" in html
    failures = html[html.index("Scores that failed") :]
    assert "context_recall" in failures and "q0" in failures


def test_the_same_run_renders_the_same_bytes(rendered):
    html, scores = rendered
    run = make_run(DAY)
    assert render_report(run, scores) == render_report(run, list(reversed(scores)))


def test_metrics_json_is_flat_per_metric_and_stratum(tmp_path):
    run = make_run(DAY)
    aggs = aggregate(make_scores(run, 0.7), n_resamples=0)
    path = write_metrics_json(tmp_path / "metrics" / "offline.json", aggs)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert set(data) == {
        "faithfulness",
        "context_precision_share",
        "recall@5",
    }  # context_recall: no ok score, left out
    assert list(data["faithfulness"]) == ["all", "multi_hop/es", "single_hop/es"]
    assert all(isinstance(v, float) for stratum in data.values() for v in stratum.values())
    assert data["recall@5"]["all"] == pytest.approx(0.75)


def test_the_report_says_how_the_diagnosis_corrects_its_claims():
    run = make_run(DAY)
    scores = make_scores(run, 0.7)
    assert "after benjamini-hochberg over every band claim" in render_report(run, scores)
    uncorrected = render_report(run, scores, correction="none")
    assert (
        "after benjamini-hochberg" not in uncorrected
        and "on its own (correction: none" in uncorrected
    )
    # The CLI's summary says it too.
    summary = run_summary(run, aggregate(scores), items=12, correction="none")
    assert summary.diagnosis_correction == "none" and summary.diagnosis
    with console.capture() as printed:
        print_eval_summary(summary)
    assert (
        "diagnosis (bands need evidence; no correction: each claim on its own interval)"
        in printed.get()
    )


def test_the_report_opens_with_its_verdict_and_a_chart_and_folds_its_method(rendered):
    html, _ = rendered
    body = html[html.index("<body>") :]
    verdict, method = (
        body.index('<section class="verdict">'),
        body.index('<details class="method"><summary>Method'),
    )
    assert body.index("<h1>") < verdict < body.index("<svg") < method < body.index("<h2>")
    lead = body[verdict:method]
    assert (
        '<span class="fail">FAILED</span>' in lead
        and "<strong>faithfulness</strong> against the baseline" in lead
    )
    assert "difference from the run gated against" in lead  # the chart of the gate's differences
    assert body.index("llama-70b-juez") > method  # the models and params sit in the folded method
    assert body.count("<details") == body.count("</details>")


def test_an_ungated_run_opens_with_why_and_the_run_means_drawn_once():
    run = make_run(DAY)
    html = render_report(run, make_scores(run, 0.7))
    lead = html[html.index('<section class="verdict">') : html.index('<details class="method">')]
    assert "Not gated: no earlier run of prod" in lead and "all: mean and 95 % CI" in lead
    assert html.count('aria-label="all: mean and 95 % CI"') == 1  # drawn once, in the verdict
    assert (
        html.count("<svg") == 1 + 2 + 4 + 4
    )  # the verdict's, 2 strata, 4 histograms, 4 trends (this run alone)


def test_the_report_and_the_cli_list_the_topics_missed_apart_from_the_matchers_misses():
    def topic(name: str, unmatched: int, matched: int, coverage: float, gap: float) -> dict:
        return {
            "cluster_id": name,
            "language": "es",
            "questions": unmatched,
            "estimated_traces": 3.0 * unmatched,
            "share": 3.0 * unmatched / 300,
            "representatives": [{"trace_id": "t", "app": "docs", "question": f"¿{name}?"}],
            "matched_questions": matched,
            "coverage": coverage,
            "gap_traces": gap,
            "gap_share": gap / 300,
        }

    rates = {"tpr": 0.7, "fpr": 0.1, "positives": 100, "negatives": 100, "auc": 0.85}
    coverage = GoldenCoverage(
        status="ok",
        golden="docs",
        golden_version="v2",
        max_questions=5_000,
        min_cluster_size=5,
        threshold={"value": 0.3, "method": "calibrated", **rates},
        strata=[
            {
                "stratum": "all",
                "day_traces": 300,
                "questions": 120,
                "covered": 80,
                "matched": 0.6,
                "ratio": 0.83,
                "ci_low": 0.7,
                "ci_high": 0.95,
            }
        ],
        clusters=[topic("impresoras", 6, 0, 0.0, 18.0)],
        matcher_misses=[topic("ratón", 5, 12, 0.8, 6.0)],
    )
    run = make_run(DAY)
    run.suite, run.params = "online", {"coverage": coverage.model_dump(mode="json")}
    html = render_report(run, make_scores(run, 0.7))
    topics = html[html.index("Largest topics the golden set misses") :]
    table = topics[topics.index("<table>") : topics.index("</table>")]
    # The listed topic shows its matched questions, coverage and missed share; the matcher's misses
    # are named apart, below it.
    assert "¿impresoras?" in table and "6.0 %" in table and "¿ratón?" not in table
    assert "Likely the matcher's misses, not queued (1 topic" in topics
    assert "5 unmatched\nand 12 matched questions, coverage 0.800 (“¿ratón?”)" in topics
    with console.capture() as printed:
        print_coverage(coverage)
    out = printed.get()
    assert "missed topic impresoras (es, 6.0% of the day missed, coverage 0.000)" in out
    assert "1 uncovered topic matched about as often as covered ones" in out

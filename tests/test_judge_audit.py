"""Can the judge be trusted? The audit queue, people's labels, agreement and the prediction-powered interval."""

from __future__ import annotations

import csv
import json
import warnings
from datetime import date

import numpy as np
import pytest

from pipelines.evaluation.metrics.verdicts import AUDITED, SUPPORTED_FROM
from pipelines.evaluation.outputs.judge_audit import JUDGE_AUDIT, audit_run
from pipelines.evaluation.outputs.push import build_registry
from pipelines.evaluation.outputs.report import ItemView, render_report
from pipelines.evaluation.outputs.summary import run_summary
from pipelines.evaluation.runs.finalize import UNSUPPORTED_BELOW
from pipelines.evaluation.statistics.intervals import aggregate
from pipelines.evaluation.statistics.judge_agreement import agreement, calibrate, verdict_weights
from pipelines.files import FORMULA_START
from pipelines.records import Score
from pipelines.stores.results import EvalRun, run_id
from pipelines.workspace import Workspace

DAY = date(2026, 3, 1)
RUN = run_id("offline", DAY, "prod")


def test_kappa_accuracy_and_confusion_on_a_worked_example():
    # 50 items: judge yes & human yes 20, judge yes & human no 5, judge no & human yes 10, judge no & human no 15.
    # p_o = 35/50 = 0.70; p_e = 0.5·0.6 + 0.5·0.4 = 0.50; κ = (0.70 − 0.50) / (1 − 0.50) = 0.40.
    human = [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15
    judge = [1] * 25 + [0] * 25
    agreed = agreement(human, judge)
    assert agreed.kappa == pytest.approx(0.40) and agreed.accuracy == pytest.approx(0.70) and agreed.n == 50
    assert agreed.confusion == {"judge_yes_human_yes": 20, "judge_yes_human_no": 5, "judge_no_human_yes": 10,
                                "judge_no_human_no": 15}  # fmt: skip
    # A queue with as many items per verdict as a population of 80 % judge-yes: weights 0.8/0.5 and 0.2/0.5.
    assert verdict_weights(judge, [1] * 80 + [0] * 20).tolist() == pytest.approx([1.6] * 25 + [0.4] * 25)
    assert agreement([1, 1, 1], [1, 1, 1]).kappa is None  # chance explains everything: κ undefined, not 1
    assert SUPPORTED_FROM == UNSUPPORTED_BELOW  # faithfulness' 0/1 form is the report's supported/made-up line


def test_the_ppi_interval_covers_the_true_mean_where_the_judge_only_one_does_not():
    """A judge with 15 % false positives and 5 % false negatives on a metric whose true mean is 0.5: its verdicts
    average 0.55. N = 2,000 judged, n = 200 labelled (100 per verdict, as the audit queue draws them)."""
    filters = list(warnings.filters)
    rng = np.random.default_rng(20)
    repetitions, ppi_covers, judge_covers, widths = 300, 0, 0, []
    for _ in range(repetitions):
        truth = rng.random(2000) < 0.5
        verdicts = np.where(truth, rng.random(2000) >= 0.05, rng.random(2000) < 0.15).astype(int)
        labelled = np.concatenate([rng.choice(np.flatnonzero(verdicts == v), 100, replace=False) for v in (0, 1)])
        c = calibrate("offline", "m", "m", human=truth[labelled].astype(int), labelled_verdicts=verdicts[labelled],
                      judged_verdicts=verdicts)  # fmt: skip
        ppi_covers += c.ppi_ci[0] <= truth.mean() <= c.ppi_ci[1]
        judge_covers += c.judge_ci[0] <= truth.mean() <= c.judge_ci[1]
        widths.append((c.ppi_ci[1] - c.ppi_ci[0]) / 2)
    assert ppi_covers / repetitions >= 0.93
    assert warnings.filters == filters  # importing ppi_py did not silence the process' warnings
    assert judge_covers / repetitions <= 0.05
    # The labels-needed formula is the interval's own variance: asking for the half-width 200 labels gave needs ~200.
    half = (c.ppi_ci[1] - c.ppi_ci[0]) / 2
    again = calibrate("offline", "m", "m", human=truth[labelled].astype(int), labelled_verdicts=verdicts[labelled],
                      judged_verdicts=verdicts, half_width=half)  # fmt: skip
    assert again.labels_needed == pytest.approx(200, abs=2) and again.more_labels <= 2


def _run() -> EvalRun:
    return EvalRun(run_id=RUN, suite="offline", logical_date=DAY, target="prod", dataset_version="demo@v1")


def _scores(n: int = 40) -> tuple[list[Score], dict[str, ItemView]]:
    """Half the answers correct, faithfulness high for even items; item texts that look like spreadsheet formulas."""
    base = dict(run_id=RUN, suite="offline", stratum="single_hop/es", status="ok", dataset_version="demo@v1")
    scores, views = [], {}
    for i in range(n):
        item = f"it{i:03d}"
        scores += [Score(**base, item_id=item, metric="answer_correctness", value=float(i % 2)),
                   Score(**base, item_id=item, metric="faithfulness", value=0.9 if i % 4 < 2 else 0.4),
                   Score(**base, item_id=item, metric="answer_relevancy", value=0.8)]  # fmt: skip
        views[item] = ItemView(item_id=item, question=f'=HYPERLINK("http://x/?{i}")', answer=f"+{i} cmd",
                               contexts=[f"c{i}: @SUM(A1)"], reference_answer="-1")  # fmt: skip
    return scores, views


def _label_file(path, labels: dict[str, str]):
    """What a person saves after filling the label column in a spreadsheet."""
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:
        row["label"] = labels.get(row["audit_id"], "")
        row["labeller"] = "ana"
    out = path.with_name("labelled.csv")
    with out.open("w", newline="", encoding="utf-8-sig") as fh:  # "CSV UTF-8" from a spreadsheet has a BOM
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return out, rows


def _import(settings, monkeypatch, path):
    from typer.testing import CliRunner

    from pipelines.cli import app

    monkeypatch.setenv("RAGWATCH_HOME", str(settings.home))
    return CliRunner().invoke(app, ["judge", "labels", "import", str(path)], terminal_width=240)


def test_queue_export_labels_and_import_round_trip_through_the_cli(settings, monkeypatch):
    settings = settings.model_copy(update={"judge_audit_per_day": 8})
    scores, views = _scores()
    audit = audit_run(settings, _run(), scores, views)
    workspace = Workspace.from_settings(settings)
    queue = workspace.judge_audit_queue("offline", DAY, "prod")
    assert audit["queued"] == 8 and audit["queue"] == str(workspace.relative(queue))
    with queue.open(newline="", encoding="utf-8") as fh:
        cells = [cell for row in csv.reader(fh) for cell in row]
    assert not [c for c in cells if c.startswith(FORMULA_START)]  # formulas stay text in a spreadsheet
    assert "judge_verdict" not in cells and "0.9" not in cells  # labellers never see the judge's verdict
    first = queue.read_text(encoding="utf-8")
    assert audit_run(settings, _run(), scores, views)["queued"] == 8 and queue.read_text(encoding="utf-8") == first
    verdicts = json.loads(workspace.judge_audit_key("offline", DAY, "prod").read_text())
    strata = {(v["metric"], v["judge_verdict"]) for v in verdicts.values()}
    assert strata == {(m, v) for m in AUDITED for v in (0, 1)}  # both verdicts of every audited metric, 2 each

    # The person agrees with the judge except once, and leaves one row for later.
    aids = sorted(verdicts)
    labels = {aid: ("yes" if verdicts[aid]["judge_verdict"] else "no") for aid in aids[1:]}
    labels[aids[1]] = "no" if labels[aids[1]] == "yes" else "yes"
    labelled, rows = _label_file(queue, labels)
    assert rows[0]["question"].startswith("'=HYPERLINK")  # a spreadsheet shows it as text
    result = _import(settings, monkeypatch, labelled)
    assert result.exit_code == 0, result.output
    assert "7 labels imported" in result.output and "offline answer_correctness" in result.output
    [stored] = workspace.judge_label_files
    assert len(stored.read_text().splitlines()) == 7
    calibration = {c["metric"]: c for c in audit_run(settings, _run(), scores, views)["calibration"]}
    assert calibration["faithfulness"]["labels"] + calibration["answer_correctness"]["labels"] == 7
    assert "answer_relevancy" not in calibration  # no 0/1 form: not audited


def test_a_bad_label_file_gets_a_clear_error_and_imports_nothing(settings, monkeypatch):
    scores, views = _scores(8)
    audit_run(settings, _run(), scores, views)
    queue = Workspace.from_settings(settings).judge_audit_queue("offline", DAY, "prod")
    with queue.open(newline="", encoding="utf-8") as fh:
        aids = [row["audit_id"] for row in csv.DictReader(fh)]
    labelled, _ = _label_file(queue, {aids[0]: "yes", aids[1]: "maybe"})
    text = labelled.read_text(encoding="utf-8-sig").replace(aids[2], "deadbeefdeadbeef", 1)
    labelled.write_text(text.replace("\n", "\n", 1), encoding="utf-8")
    with labelled.open("a", encoding="utf-8", newline="") as fh:
        csv.writer(fh).writerow(["deadbeefdeadbeef", "faithfulness", "", "", "", "", "", "no", "ana", ""])
    result = _import(settings, monkeypatch, labelled)
    said = " ".join(result.output.split())
    assert result.exit_code == 1
    assert "label 'maybe' is not yes or no" in said and "'deadbeefdeadbeef' was never queued" in said
    assert "nothing was imported" in said and "row 3" in said
    assert Workspace.from_settings(settings).judge_label_files == []


def test_kappa_below_0_6_says_not_trustworthy_in_report_summary_and_gauge(settings, monkeypatch):
    settings = settings.model_copy(update={"judge_audit_per_day": 48})
    scores, views = _scores(60)
    audit_run(settings, _run(), scores, views)
    verdicts = json.loads(Workspace.from_settings(settings).judge_audit_key("offline", DAY, "prod").read_text())
    # People agree with the judge on only 3 of every 5 items: κ about 0.2.
    labels = {aid: ("yes" if v["judge_verdict"] == (i % 5 < 3) else "no") for i, (aid, v) in enumerate(sorted(verdicts.items()))}
    labelled, _ = _label_file(Workspace.from_settings(settings).judge_audit_queue("offline", DAY, "prod"), labels)
    assert _import(settings, monkeypatch, labelled).exit_code == 0
    run = _run()
    run.params = {JUDGE_AUDIT: audit_run(settings, run, scores, views)}
    aggregates = aggregate(scores)
    summary = run_summary(run, aggregates, items=60)
    correctness = next(r for r in summary.judge_trust if r.metric == "answer_correctness")
    assert correctness.labels == 24 and correctness.kappa < 0.6 and correctness.trusted is False
    assert correctness.verdict.startswith("not trustworthy: κ") and correctness.ppi_ci is not None
    from pipelines.cli import _judge_trust_line

    assert "not trustworthy: κ" in _judge_trust_line(correctness)  # the CLI's run summary
    html = render_report(run, scores, aggregates=aggregates)
    assert "Can the judge be trusted?" in html and "not trustworthy: κ" in html and "out of reach with 60 judged" in html
    registry = build_registry([], suite="offline", target="prod", judge=summary.judge_trust)
    key = {"suite": "offline", "target": "prod", "metric": "answer_correctness"}
    assert registry.get_sample_value("rag_judge_trusted", key) == 0
    assert registry.get_sample_value("rag_judge_agreement_kappa", key) == pytest.approx(correctness.kappa)
    assert registry.get_sample_value("rag_judge_audit_labels", key) == 24


def test_the_demo_reviewer_labels_every_queued_item_at_its_planted_error_rates(settings, monkeypatch):
    from pipelines.demo.audit_labels import FALSE_NO, FALSE_YES, LABELLER, plant_audit_labels
    from pipelines.files import read_filled_in_rows
    from pipelines.models.offline import draw

    settings = settings.model_copy(update={"judge_audit_per_day": 8})
    scores, views = _scores()
    audit_run(settings, _run(), scores, views)
    workspace = Workspace.from_settings(settings)
    labelled, path = plant_audit_labels(workspace, "offline", DAY, "prod")
    key = json.loads(workspace.judge_audit_key("offline", DAY, "prod").read_text())
    rows = read_filled_in_rows(path)
    assert labelled == len(rows) == 8 and {r["labeller"] for r in rows} == {LABELLER}
    for row in rows:
        verdict = key[row["audit_id"]]["judge_verdict"]
        flipped = draw("demo-audit-label", row["audit_id"]) < (FALSE_YES if verdict else FALSE_NO)
        assert row["label"] == ("yes" if verdict != flipped else "no")
    result = _import(settings, monkeypatch, path)
    assert result.exit_code == 0 and "8 labels imported" in result.output, result.output

"""Can the judge be trusted? The audit queue, people's labels, agreement and the prediction-powered
interval."""

from __future__ import annotations

import csv
import json
import warnings
from datetime import date

import numpy as np
import pytest

from pipelines.core.files import FORMULA_START
from pipelines.core.records import Score
from pipelines.core.workspace import Workspace
from pipelines.evaluation.metrics.verdicts import AUDITED, SUPPORTED_FROM
from pipelines.evaluation.outputs.judge_audit import JUDGE_AUDIT, audit_run
from pipelines.evaluation.outputs.push import build_registry
from pipelines.evaluation.outputs.report import ItemView, render_report
from pipelines.evaluation.outputs.summary import judge_trust, run_summary
from pipelines.evaluation.runs.finalize import UNSUPPORTED_BELOW
from pipelines.evaluation.statistics.aggregates import aggregate
from pipelines.evaluation.statistics.judge_agreement import agreement, calibrate
from pipelines.evaluation.statistics.misclassification import label_weights
from pipelines.stores.results import EvalRun, run_id

DAY = date(2026, 3, 1)
RUN = run_id("offline", DAY, "prod")


def test_kappa_accuracy_and_confusion_on_a_worked_example():
    # 50 items: judge yes & human yes 20, judge yes & human no 5, judge no & human yes 10, judge no
    # & human no 15. p_o = 35/50 = 0.70; p_e = 0.5·0.6 + 0.5·0.4 = 0.50; κ = (0.70 − 0.50) / (1 −
    # 0.50) = 0.40.
    human = [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15
    judge = [1] * 25 + [0] * 25
    agreed = agreement(human, judge)
    assert (
        agreed.kappa == pytest.approx(0.40)
        and agreed.accuracy == pytest.approx(0.70)
        and agreed.n == 50
    )
    assert agreed.confusion == {
        "judge_yes_human_yes": 20,
        "judge_yes_human_no": 5,
        "judge_no_human_yes": 10,
        "judge_no_human_no": 15,
    }
    # A queue with as many items per verdict as its run's 80 % judge-yes: weights 0.8/0.5 and
    # 0.2/0.5; another run's labels (2 yes, 1 no, of a run judging 50 % yes) are weighted to that
    # run's own mix: 0.5/(2/3), 0.5/(1/3).
    weights = label_weights(judge + [1, 1, 0], ["a"] * 50 + ["b"] * 3, {"a": 0.8, "b": 0.5})
    assert weights.tolist() == pytest.approx([1.6] * 25 + [0.4] * 25 + [0.75, 0.75, 1.5])
    assert (
        agreement([1, 1, 1], [1, 1, 1]).kappa is None
    )  # chance explains everything: κ undefined, not 1
    assert (
        SUPPORTED_FROM == UNSUPPORTED_BELOW
    )  # faithfulness' 0/1 form is the report's supported/made-up line


SENS, SPEC = 0.95, 0.85
"""A judge with 5 % false negatives and 15 % false positives."""


def _judge(rng, mean: float, n: int, sens: float = SENS, spec: float = SPEC):
    truth = (rng.random(n) < mean).astype(int)
    return truth, np.where(truth == 1, rng.random(n) < sens, rng.random(n) >= spec).astype(int)


def _labelled_runs(rng, means, sens=(SENS,) * 5, per_verdict: int = 15, judged: int = 2000) -> dict:
    """Earlier runs of N judged items, each queueing `per_verdict` items per verdict, all
    labelled."""
    out = {
        "human": [],
        "labelled_verdicts": [],
        "labelled_runs": [],
        "labelled_days": [],
        "run_yes_share": {},
    }
    for r, (mean, s) in enumerate(zip(means, sens)):
        truth, said = _judge(rng, mean, judged, sens=s)
        run = f"offline/2026-02-{r + 1:02d}/prod"
        out["run_yes_share"][run] = float(said.mean())
        for v in (0, 1):
            picked = rng.choice(np.flatnonzero(said == v), per_verdict, replace=False)
            out["human"] += truth[picked].tolist()
            out["labelled_verdicts"] += [v] * per_verdict
            out["labelled_runs"] += [run] * per_verdict
            out["labelled_days"] += [f"2026-02-{r + 1:02d}"] * per_verdict
    return out


def test_the_corrected_interval_covers_when_quality_moves_and_the_previous_one_did_not():
    """150 labels from 5 earlier runs at true mean 0.7, this run at 0.5, the judge unchanged. The
    previous estimator (ppi_py's PPI, λ = 1, every label weighted to this run's verdict mix) carried
    P(truth | verdict) over from the earlier runs; Rogan–Gladen carries the judge's error rates."""
    filters = list(warnings.filters)
    rng = np.random.default_rng(29)
    repetitions, covers, before, judge_covers, given, widths, rates = 200, 0, 0, 0, 0, [], []
    for _ in range(repetitions):
        labels = _labelled_runs(rng, (0.7,) * 5)
        truth, said = _judge(rng, 0.5, 2000)
        c = calibrate(
            "offline", "m", "m", judged_verdicts=said, run="offline/2026-03-01/prod", **labels
        )
        lo, hi = _ppi_lambda_one(
            np.asarray(labels["human"]), np.asarray(labels["labelled_verdicts"]), said
        )
        before += lo <= truth.mean() <= hi
        judge_covers += c.judge_ci[0] <= truth.mean() <= c.judge_ci[1]
        if c.corrected_ci is not None:
            given += 1
            covers += c.corrected_ci[0] <= truth.mean() <= c.corrected_ci[1]
            widths.append((c.corrected_ci[1] - c.corrected_ci[0]) / 2)
        rates.append((c.sensitivity, c.specificity))
    assert (
        given >= 0.9 * repetitions
    )  # the shift test rejects an unchanged judge about 5 % of the time, at most
    assert covers / given >= 0.92
    assert before / repetitions <= 0.5 and judge_covers / repetitions <= 0.05
    assert (
        np.mean(widths) < 0.1
    )  # honest, not uselessly wide: ±0.072 in `ragwatch bench judge-shift`
    assert np.mean(rates, axis=0) == pytest.approx(
        [SENS, SPEC], abs=0.02
    )  # each label weighted to its own run
    assert (
        warnings.filters == filters
    )  # importing ppi_py (the previous estimator) did not silence warnings
    # Labels needed: the variance formula is the interval's own — asking for the half-width 150
    # labels gave ~150.
    half = (c.corrected_ci[1] - c.corrected_ci[0]) / 2
    again = calibrate("offline", "m", "m", judged_verdicts=said, run="r", half_width=half, **labels)
    assert again.labels_needed == pytest.approx(150, abs=3)


def _ppi_lambda_one(y: np.ndarray, f: np.ndarray, judged: np.ndarray) -> tuple[float, float]:
    weights = np.ones(len(f))
    for v in (0, 1):
        weights[f == v] = (judged == v).mean() / (f == v).mean()
    with warnings.catch_warnings():  # ppi_py's import calls warnings.simplefilter("ignore")
        from ppi_py import ppi_mean_ci

        low, high = ppi_mean_ci(
            y.astype(float), f.astype(float), judged.astype(float), alpha=0.05, w=weights, lam=1.0
        )
    return float(np.ravel(low)[0]), float(np.ravel(high)[0])


def test_a_judge_changed_between_labelled_runs_is_corrected_by_the_later_ones_only():
    rng = np.random.default_rng(4)
    later, covered = 0, 0
    for _ in range(30):
        labels = _labelled_runs(rng, (0.7,) * 5, sens=(0.95, 0.95, 0.75, 0.75, 0.75))
        truth, said = _judge(rng, 0.5, 2000, sens=0.75)
        c = calibrate("offline", "m", "m", judged_verdicts=said, **labels)
        if c.corrected_ci is not None and "labels of the later runs only" in " ".join(c.notes):
            later += 1
            covered += c.corrected_ci[0] <= truth.mean() <= c.corrected_ci[1]
            assert (
                "90 labels of earlier runs" in c.corrected_method
            )  # the later three runs' 30 labels each
    assert (
        later >= 25 and covered >= 0.85 * later
    )  # all labels at once would cover ~0 (sens 0.95 vs 0.75)
    # One earlier run only: its error rates cannot be compared with another's, so nothing is claimed
    # ...
    one = _labelled_runs(rng, (0.7,), per_verdict=30)
    judged = _judge(rng, 0.5, 2000)[1]
    c = calibrate("offline", "m", "m", judged_verdicts=judged, run="offline/2026-03-01/prod", **one)
    assert c.corrected_ci is None and c.shift_p_value is None and "untested" in c.notes[-1]
    # ... unless those labels are of this very run's items: then no assumption carries them over.
    c = calibrate("offline", "m", "m", judged_verdicts=judged, run="offline/2026-02-01/prod", **one)
    assert c.corrected_ci is not None and c.corrected_ci[0] < c.corrected_mean < c.corrected_ci[1]


def _run() -> EvalRun:
    return EvalRun(
        run_id=RUN, suite="offline", logical_date=DAY, target="prod", dataset_version="demo@v1"
    )


def _scores(n: int = 40) -> tuple[list[Score], dict[str, ItemView]]:
    """Half the answers correct, faithfulness high for even items; item texts that look like
    spreadsheet formulas."""
    base = dict(
        run_id=RUN, suite="offline", stratum="single_hop/es", status="ok", dataset_version="demo@v1"
    )
    scores, views = [], {}
    for i in range(n):
        item = f"it{i:03d}"
        scores += [
            Score(**base, item_id=item, metric="answer_correctness", value=float(i % 2)),
            Score(**base, item_id=item, metric="faithfulness", value=0.9 if i % 4 < 2 else 0.4),
            Score(**base, item_id=item, metric="answer_relevancy", value=0.8),
        ]
        views[item] = ItemView(
            item_id=item,
            question=f'=HYPERLINK("http://x/?{i}")',
            answer=f"+{i} cmd",
            contexts=[f"c{i}: @SUM(A1)"],
            reference_answer="-1",
        )
    return scores, views


def _label_file(path, labels: dict[str, str]):
    """What a person saves after filling the label column in a spreadsheet."""
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:
        row["label"] = labels.get(row["audit_id"], "")
        row["labeller"] = "ana"
    out = path.with_name("labelled.csv")
    with out.open(
        "w", newline="", encoding="utf-8-sig"
    ) as fh:  # "CSV UTF-8" from a spreadsheet has a BOM
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
    assert not [
        c for c in cells if c.startswith(FORMULA_START)
    ]  # formulas stay text in a spreadsheet
    assert (
        "judge_verdict" not in cells and "0.9" not in cells
    )  # labellers never see the judge's verdict
    first = queue.read_text(encoding="utf-8")
    assert (
        audit_run(settings, _run(), scores, views)["queued"] == 8
        and queue.read_text(encoding="utf-8") == first
    )
    verdicts = json.loads(workspace.judge_audit_key("offline", DAY, "prod").read_text())
    strata = {(v["metric"], v["judge_verdict"]) for v in verdicts.values()}
    assert strata == {
        (m, v) for m in AUDITED for v in (0, 1)
    }  # both verdicts of every audited metric, 2 each
    # What the correction needs to weigh each label for its own run: the run's date and verdict mix
    # (20 of 40 yes).
    assert {(v["day"], v["run_judged"], v["run_judged_yes"]) for v in verdicts.values()} == {
        (DAY.isoformat(), 40, 20)
    }

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
    calibration = {
        c["metric"]: c for c in audit_run(settings, _run(), scores, views)["calibration"]
    }
    assert calibration["faithfulness"]["labels"] + calibration["answer_correctness"]["labels"] == 7
    assert "answer_relevancy" not in calibration  # no 0/1 form: not audited


def test_labels_of_the_run_itself_give_a_corrected_mean_and_of_one_other_run_none(
    settings, monkeypatch
):
    settings = settings.model_copy(update={"judge_audit_per_day": 48})
    scores, views = _scores(60)
    audit_run(settings, _run(), scores, views)
    workspace = Workspace.from_settings(settings)
    verdicts = json.loads(workspace.judge_audit_key("offline", DAY, "prod").read_text())
    # People agree with the judge on all but every sixth item.
    labels = {
        aid: ("yes" if v["judge_verdict"] == (i % 6 > 0) else "no")
        for i, (aid, v) in enumerate(sorted(verdicts.items()))
    }
    labelled, _ = _label_file(workspace.judge_audit_queue("offline", DAY, "prod"), labels)
    assert _import(settings, monkeypatch, labelled).exit_code == 0
    same = {c["metric"]: c for c in audit_run(settings, _run(), scores, views)["calibration"]}[
        "answer_correctness"
    ]
    assert (
        same["labels"] == 24 and same["corrected_ci"] is not None and same["shift_p_value"] is None
    )
    assert same["corrected_ci"][0] <= same["corrected_mean"] <= same["corrected_ci"][1]
    # The judge's error rates, as the summary line states them: 12 labels per verdict of a run
    # judging 50 % yes weigh alike, so they are plain shares of the labels.
    pairs = [
        (labels[aid] == "yes", v["judge_verdict"])
        for aid, v in verdicts.items()
        if v["metric"] == "answer_correctness"
    ]
    [row] = judge_trust({"calibration": [same]})
    assert row.sensitivity == pytest.approx(
        sum(h and f for h, f in pairs) / sum(h for h, _ in pairs)
    )
    assert row.specificity == pytest.approx(
        sum(not h and not f for h, f in pairs) / sum(not h for h, _ in pairs)
    )
    from pipelines.cli.render.evals import judge_trust_line as _judge_trust_line

    line = _judge_trust_line(row)
    assert "sensitivity" in line and "corrected for its errors" in line, line
    # The next day's run has only that one earlier run's labels: whether the judge errs alike is
    # untested.
    later = date(2026, 3, 2)
    run = EvalRun(
        run_id=run_id("offline", later, "prod"),
        suite="offline",
        logical_date=later,
        target="prod",
        dataset_version="demo@v1",
    )
    moved = [s.model_copy(update={"run_id": run.run_id}) for s in scores]
    other = {c["metric"]: c for c in audit_run(settings, run, moved, views)["calibration"]}[
        "answer_correctness"
    ]
    assert other["corrected_ci"] is None and "untested" in other["notes"][-1]


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
        csv.writer(fh).writerow(
            ["deadbeefdeadbeef", "faithfulness", "", "", "", "", "", "no", "ana", ""]
        )
    result = _import(settings, monkeypatch, labelled)
    said = " ".join(result.output.split())
    assert result.exit_code == 1
    assert (
        "label 'maybe' is not yes or no" in said and "'deadbeefdeadbeef' was never queued" in said
    )
    assert "nothing was imported" in said and "row 3" in said
    assert Workspace.from_settings(settings).judge_label_files == []


def test_kappa_below_0_6_says_not_trustworthy_in_report_summary_and_gauge(settings, monkeypatch):
    settings = settings.model_copy(update={"judge_audit_per_day": 48})
    scores, views = _scores(60)
    audit_run(settings, _run(), scores, views)
    verdicts = json.loads(
        Workspace.from_settings(settings).judge_audit_key("offline", DAY, "prod").read_text()
    )
    # People agree with the judge on only 3 of every 5 items: κ about 0.2.
    labels = {
        aid: ("yes" if v["judge_verdict"] == (i % 5 < 3) else "no")
        for i, (aid, v) in enumerate(sorted(verdicts.items()))
    }
    labelled, _ = _label_file(
        Workspace.from_settings(settings).judge_audit_queue("offline", DAY, "prod"), labels
    )
    assert _import(settings, monkeypatch, labelled).exit_code == 0
    run = _run()
    run.params = {JUDGE_AUDIT: audit_run(settings, run, scores, views)}
    aggregates = aggregate(scores)
    summary = run_summary(run, aggregates, items=60)
    correctness = next(r for r in summary.judge_trust if r.metric == "answer_correctness")
    assert correctness.labels == 24 and correctness.kappa < 0.6 and correctness.trusted is False
    # Labels of the run's own items give its mean whatever the judge's quality (no division by sens
    # + spec − 1), and every surface names the method from the same field.
    assert (
        correctness.verdict.startswith("not trustworthy: κ")
        and correctness.corrected_ci is not None
    )
    assert (
        correctness.corrected_method
        == "24 labels of this run, weighted to its verdict mix (MOVER-Jeffreys interval)"
    )
    from pipelines.cli.render.evals import judge_trust_line as _judge_trust_line

    line = _judge_trust_line(correctness)  # the CLI's run summary
    assert "not trustworthy: κ" in line and correctness.corrected_method in line
    html = render_report(run, scores, aggregates=aggregates)
    assert "Can the judge be trusted?" in html and "not trustworthy: κ" in html
    assert correctness.corrected_method in html
    registry = build_registry([], suite="offline", target="prod", judge=summary.judge_trust)
    key = {"suite": "offline", "target": "prod", "metric": "answer_correctness"}
    assert registry.get_sample_value("rag_judge_trusted", key) == 0
    assert registry.get_sample_value("rag_judge_agreement_kappa", key) == pytest.approx(
        correctness.kappa
    )
    assert registry.get_sample_value("rag_judge_audit_labels", key) == 24


def test_the_demo_reviewer_labels_every_queued_item_at_its_planted_error_rates(
    settings, monkeypatch
):
    from pipelines.core.files import read_filled_in_rows
    from pipelines.models.offline import draw
    from ragwatch_harness.demo.audit_labels import FALSE_NO, FALSE_YES, LABELLER, plant_audit_labels

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


def test_bench_judge_shift_prints_every_interval_side_by_side():
    from typer.testing import CliRunner

    from pipelines.cli import app
    from ragwatch_harness.bench.judge_shift import ESTIMATORS

    result = CliRunner().invoke(app, ["bench", "judge-shift", "--reps", "20"], terminal_width=120)
    assert result.exit_code == 0, result.output
    assert all(name in result.output for name in ESTIMATORS) and "quality 0.7" in result.output
    assert "labels for ±0.05 at p 0.5, N 500, same day: named" in result.output


def test_the_bench_draws_its_runs_as_the_product_sees_them():
    from ragwatch_harness.bench.judge_shift import Cell, shifts, simulate, tally

    rng = np.random.default_rng(5)
    rows = {c.name: tally(simulate(c, reps=200, rng=rng)) for c in shifts()}
    moved = rows["quality 0.7 → 0.5"]
    assert moved["corrected"]["covered"] >= 0.9 * moved["corrected"]["given"] >= 0.9 * 0.85 * 200
    assert moved["judge-only"]["covered"] <= 10 and moved["labels-only"]["covered"] <= 10
    # A judge whose error rates moved between labelled runs: the later runs' labels correct this
    # run's mean.
    changed = rows["sens 0.95 → 0.75 from the 3rd labelled run"]["corrected"]
    assert changed["given"] >= 0.9 * 200 and changed["covered"] >= 0.9 * changed["given"]
    # Same-day labels: the corrected interval is the labels' own, never wider.
    same = tally(simulate(Cell("p 0.9", "same day", 30, 0.9, (0.9, 0.9)), reps=200, rng=rng))
    assert same["corrected"]["not_wider"] == same["corrected"]["given"] == 200

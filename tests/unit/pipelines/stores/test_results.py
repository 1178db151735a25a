"""The results DB on SQLite and on a real PostgreSQL: reruns replace, baselines skip bad runs."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import date, datetime, timezone

import pytest
import sqlalchemy as sa

from pipelines.core.records import Score
from pipelines.evaluation.statistics.gate.gated_metrics import FULL_EVAL_METRICS, GATED_METRICS
from pipelines.stores.results import (
    EvalRun,
    ResultsStore,
    ResultsStoreError,
    eval_runs,
    eval_scores,
    run_id,
)

DAY = date(2026, 3, 2)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.services)])
def store(request, tmp_path):
    if request.param == "sqlite":
        results = ResultsStore(f"sqlite:///{tmp_path / 'nested' / 'results.db'}")
    else:
        pg = request.getfixturevalue("postgres")
        name = f"results_{uuid.uuid4().hex[:8]}"
        pg.psql(f"CREATE ROLE {name} LOGIN PASSWORD 'results-pw';")
        pg.psql(f"CREATE DATABASE {name} OWNER {name};")  # not allowed inside the same transaction
        results = ResultsStore(pg.url(name, "results-pw", name))
    results.create()
    results.create()  # idempotent
    yield results
    results.dispose()


def make_run(day: date = DAY, *, target: str = "prod", suite: str = "offline", **kw) -> EvalRun:
    return EvalRun(
        run_id=run_id(suite, day, target),
        suite=suite,
        logical_date=day,
        target=target,
        dataset_version="golden-v3",
        judge_model="judge-70b",
        generator_model="gen-8b",
        params={"k": 5, "nota": "índice re-creado"},
        finished_at=datetime(2026, 3, 3, 6, 0, tzinfo=timezone.utc),
        **kw,
    )


def make_scores(run: EvalRun, items: list[str], value: float = 0.8) -> list[Score]:
    out = []
    for item in items:
        for metric in ("faithfulness", "recall@5"):
            out.append(
                Score(
                    run_id=run.run_id,
                    suite=run.suite,
                    item_id=item,
                    stratum="single_hop/es",
                    metric=metric,
                    value=value,
                    status="ok",
                    judge_model=run.judge_model,
                    dataset_version=run.dataset_version,
                )
            )
    out.append(
        Score(
            run_id=run.run_id,
            suite=run.suite,
            item_id=items[0],
            stratum="single_hop/es",
            metric="context_recall",
            value=None,
            status="failed",
            error="el juez no respondió (timeout)",
            judge_model=run.judge_model,
            dataset_version=run.dataset_version,
        )
    )
    return out


def count(store: ResultsStore, table: sa.Table) -> int:
    with store.engine.connect() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one()


def test_a_run_is_named_by_one_id_that_says_what_it_ran():
    assert make_run().run_id == "offline/2026-03-02/prod"
    with pytest.raises(ValueError, match="does not name its run"):
        EvalRun(
            run_id="scheduled__2026-03-02",
            suite="offline",
            logical_date=DAY,
            target="prod",
            dataset_version="v",
        )


def test_rerunning_a_logical_date_replaces_the_run_and_its_scores(store):
    first = make_run()
    assert store.save_run(first, make_scores(first, ["a", "b", "c"])) == 7
    # A retry or backfill of the same date: fewer items, other values.
    again = make_run(gate_passed=True, gate={"passed": True})
    store.save_run(again, make_scores(again, ["a", "b"], value=0.6))
    store.save_run(again, make_scores(again, ["a", "b"], value=0.6))  # the very same attempt twice
    assert count(store, eval_runs) == 1
    assert count(store, eval_scores) == 5
    saved = store.get_run("offline/2026-03-02/prod")
    assert saved.params == {"k": 5, "nota": "índice re-creado"} and saved.gate == {"passed": True}
    assert saved.finished_at == again.finished_at and saved.created_at.tzinfo is not None
    scores = store.scores(again.run_id)
    assert {s.value for s in scores if s.status == "ok"} == {0.6}
    failed = next(s for s in scores if s.status == "failed")
    assert (
        failed.value is None
        and failed.error == "el juez no respondió (timeout)"
        and failed.suite == "offline"
    )


def test_other_targets_and_dates_are_separate_runs(store):
    for run in (make_run(), make_run(target="candidate"), make_run(date(2026, 3, 3))):
        store.save_run(run, make_scores(run, ["a"]))
    assert count(store, eval_runs) == 3
    assert store.latest_run("offline").run_id == "offline/2026-03-03/prod"
    assert store.latest_run("offline", target="candidate").run_id == "offline/2026-03-02/candidate"
    assert (
        store.latest_run("offline", before=date(2026, 3, 3), target="prod").run_id
        == "offline/2026-03-02/prod"
    )
    assert store.latest_run("online") is None
    latest = store.latest_per_target()
    assert {r.run_id for r in latest["offline"]} == {
        "offline/2026-03-03/prod",
        "offline/2026-03-02/candidate",
    }


def test_a_score_of_another_run_is_refused_before_anything_is_written(store):
    run = make_run()
    stray = make_scores(make_run(date(2026, 3, 1)), ["z"])
    with pytest.raises(ResultsStoreError, match="belongs to run 'offline/2026-03-01/prod'"):
        store.save_run(run, make_scores(run, ["a"]) + stray)
    assert count(store, eval_runs) == 0


def test_a_results_db_of_the_two_id_schema_is_refused_with_what_to_do(tmp_path):
    legacy = ResultsStore(f"sqlite:///{tmp_path / 'old.db'}")
    with legacy.engine.begin() as conn:
        conn.execute(
            sa.text("CREATE TABLE eval_runs (run_id VARCHAR PRIMARY KEY, run_key VARCHAR UNIQUE)")
        )
    with pytest.raises(ResultsStoreError, match="drop the tables eval_scores and eval_runs"):
        legacy.create()
    legacy.dispose()


def test_baseline_is_the_previous_successful_run_whatever_its_gate_said(store):
    runs = [
        make_run(date(2026, 2, 23), gate_passed=True),
        make_run(date(2026, 2, 24)),  # first run of a target: no gate
        make_run(
            date(2026, 2, 25), gate_passed=False
        ),  # a baseline all the same: the reference keeps a regression from becoming the new normal
        make_run(date(2026, 2, 26), status="failed"),
        make_run(date(2026, 2, 27), target="candidate"),
        make_run(date(2026, 2, 27), suite="online"),
        make_run(date(2026, 3, 9)),
    ]
    for run in runs:
        store.save_run(run, make_scores(run, ["a"]))
    day = lambda r: r.logical_date.isoformat()  # noqa: E731
    assert day(store.baseline_for(make_run())) == "2026-02-25"
    assert day(store.reference_for(make_run())) == "2026-02-23"
    assert store.baseline_for(make_run(date(2026, 2, 23))) is None
    # Trends: successful runs only, the latest N, oldest first.
    assert [day(r) for r in store.runs("offline", 3, target="prod")] == [
        "2026-02-24",
        "2026-02-25",
        "2026-03-09",
    ]
    assert [day(r) for r in store.runs("offline", 10, target="prod", before=DAY)] == [
        "2026-02-23",
        "2026-02-24",
        "2026-02-25",
    ]
    assert [day(r) for r in store.runs("offline", 10, target="prod", status=None)][-2:] == [
        "2026-02-26",
        "2026-03-09",
    ]


def test_a_run_that_measured_nothing_is_a_baseline_only_when_no_run_measured_anything(store):
    def failed_run(day: date) -> tuple[EvalRun, list[Score]]:  # every item failed: nothing measured
        run = make_run(day)
        return run, [
            s.model_copy(update={"status": "failed", "value": None, "error": "HTTP 503"})
            for s in make_scores(run, ["a", "b"])
        ]

    store.save_run(*failed_run(date(2026, 2, 16)))
    day = lambda r: r.logical_date.isoformat()  # noqa: E731
    # Nothing else exists: the all-failed run is the baseline, so the gate can say the next run
    # recovers.
    assert day(store.baseline_for(make_run(), metrics=["recall@5"], min_ok=2)) == "2026-02-16"
    measured = make_run(date(2026, 2, 23))
    store.save_run(measured, make_scores(measured, ["a", "b"]))
    store.save_run(*failed_run(date(2026, 2, 24)))
    quick = make_run(
        date(2026, 2, 25), gate_passed=True
    )  # a quick run without the judge: recall only
    store.save_run(quick, [s for s in make_scores(quick, ["a", "b"]) if s.metric == "recall@5"])
    choose = dict(metrics=["recall@5", "faithfulness"], min_ok=2)
    assert (
        day(store.baseline_for(make_run(), **choose, wanted={"recall@5", "faithfulness"}))
        == "2026-02-23"
    )
    assert day(store.baseline_for(make_run(), **choose, wanted={"recall@5"})) == "2026-02-25"
    # A run that measured nothing is never the reference either.
    assert [
        (day(r), sorted(m)) for r, m in store.earlier_runs(make_run(), **choose, accepted_only=True)
    ] == [
        ("2026-02-25", ["recall@5"]),
        ("2026-02-24", []),
        ("2026-02-23", ["faithfulness", "recall@5"]),
        ("2026-02-16", []),
    ]
    assert day(store.reference_for(make_run(), **choose)) == "2026-02-23"


def test_the_baseline_stays_on_the_golden_set_and_prefers_the_runs_own_version(store):
    def on(version: str, day: date = DAY) -> EvalRun:
        return replace(make_run(day), dataset_version=version)

    v3, v4 = on("golden@v3", date(2026, 2, 16)), on("golden@v4", date(2026, 2, 23))
    other = on("other@v1", date(2026, 2, 24))
    for run in (v3, v4, other):
        store.save_run(run, make_scores(run, ["a", "b"]))
    assert (
        store.baseline_for(on("golden@v3")).run_id == v3.run_id
    )  # its own version beats a later run
    assert (
        store.baseline_for(on("golden@v5")).run_id == v4.run_id
    )  # a new version: the latest of the set
    assert store.baseline_for(on("other@v2")).run_id == other.run_id
    assert store.baseline_for(on("new-set@v1")) is None  # another golden set starts over
    # A refresh does not move the reference: the first accepted run of the set, while it shares the
    # run's items.
    assert (
        store.reference_for(on("golden@v4")).run_id
        == store.reference_for(on("golden@v5")).run_id
        == v3.run_id
    )
    assert store.reference_for(on("golden@v5"), items=["a", "z"]).run_id == v3.run_id
    assert (
        store.reference_for(on("golden@v5"), items=["a", "z"], min_ok=2) is None
    )  # refreshes retired the rest


def test_a_gate_failed_run_is_a_baseline_and_the_reference_once_pinned_and_survives_a_rerun(store):
    runs = [
        make_run(date(2026, 2, 9)),
        make_run(date(2026, 2, 16), gate_passed=True),
        make_run(date(2026, 2, 23), gate_passed=False),
    ]
    for run in runs:
        store.save_run(run, make_scores(run, ["a", "b"]))
    assert (
        store.reference_for(make_run()).run_id == runs[0].run_id
    )  # no release: the first accepted run
    # The baseline is the previous run whatever its verdict; the reference skips the failed one.
    assert store.baseline_for(make_run()).run_id == runs[2].run_id
    pinned = store.pin(runs[2].run_id)  # the change was meant
    assert pinned.pinned_at is not None and pinned.gate_passed is False
    assert (
        store.reference_for(make_run()).run_id
        == store.baseline_for(make_run()).run_id
        == runs[2].run_id
    )
    assert (
        store.reference_for(runs[2]).run_id == runs[0].run_id
    )  # only releases before the run count
    store.save_run(
        runs[2], make_scores(runs[2], ["a", "b"], value=0.7)
    )  # a rerun of the release's date
    assert store.get_run(runs[2].run_id).pinned_at == pinned.pinned_at
    assert store.pin(runs[2].run_id, pinned=False).pinned_at is None
    assert store.reference_for(make_run()).run_id == runs[0].run_id
    with pytest.raises(LookupError, match="not in the results DB"):
        store.pin("offline/2020-01-01/prod")


def test_a_results_db_of_the_previous_schema_gains_the_release_column_and_keeps_its_runs(store):
    old = make_run(
        gate_passed=True,
        gate={"passed": True, "summary": "gate passed on 2 metric(s)", "metrics": []},
    )
    store.save_run(old, make_scores(old, ["a", "b"]))
    with store.engine.begin() as conn:  # the schema before releases
        conn.execute(sa.text("ALTER TABLE eval_runs DROP COLUMN pinned_at"))
    assert "pinned_at" not in {c["name"] for c in sa.inspect(store.engine).get_columns("eval_runs")}
    upgraded = ResultsStore(store.engine.url.render_as_string(hide_password=False))
    upgraded.create()
    upgraded.create()  # idempotent
    saved = upgraded.get_run(old.run_id)
    assert (
        saved.gate == old.gate and saved.pinned_at is None and len(upgraded.scores(old.run_id)) == 5
    )
    assert upgraded.pin(old.run_id).pinned_at is not None
    upgraded.dispose()


def full_scores(run: EvalRun, items: list[str]) -> list[Score]:
    """Every gated metric a full eval scores, 0.8 on every item."""
    return [
        s.model_copy(update={"metric": metric})
        for metric in FULL_EVAL_METRICS
        for s in make_scores(run, items)
        if s.metric == "recall@5"
    ]


def test_ragwatch_eval_pin_marks_a_release_and_unpins_it(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from pipelines.cli import app

    monkeypatch.setenv("RAGWATCH_HOME", str(tmp_path))
    monkeypatch.setenv("RAGWATCH_ANONYMIZER_KEY", "test-key-not-secret")
    runner = CliRunner()
    assert (
        "no results DB yet" in runner.invoke(app, ["eval", "pin", "offline/2026-03-02/prod"]).output
    )
    results = ResultsStore(f"sqlite:///{tmp_path / 'results.db'}")
    results.create()
    run = make_run(gate_passed=False)
    results.save_run(
        run, make_scores(run, ["a"])
    )  # one item: fewer than RAGWATCH_GATE_MIN_PAIRS scored ok
    empty = runner.invoke(app, ["eval", "pin", run.run_id])
    said = " ".join(empty.output.split())
    assert (
        empty.exit_code == 1
        and "measured no gated metric" in said
        and results.get_run(run.run_id).pinned_at is None
    )
    results.save_run(
        run, make_scores(run, [f"q{i}" for i in range(10)])
    )  # faithfulness and recall@5 only
    partial = " ".join(runner.invoke(app, ["eval", "pin", run.run_id]).output.split())
    assert (
        "lacks answer_correctness, answer_relevancy, context_precision_ranked, context_recall, mrr"
        in partial
    )
    assert "pass --partial" in partial and results.get_run(run.run_id).pinned_at is None
    pinned = runner.invoke(app, ["eval", "pin", run.run_id, "--partial"])
    said = " ".join(pinned.output.split())  # the console wraps long lines
    assert pinned.exit_code == 0 and "is the release later runs of prod are gated against" in said
    assert "its own gate failed" in said and results.get_run(run.run_id).pinned_at is not None
    assert runner.invoke(app, ["eval", "pin", run.run_id, "--remove"]).exit_code == 0
    assert results.get_run(run.run_id).pinned_at is None
    passed = make_run(date(2026, 3, 9), gate_passed=True)
    results.save_run(passed, full_scores(passed, [f"q{i}" for i in range(10)]))
    plain = " ".join(runner.invoke(app, ["eval", "pin", passed.run_id]).output.split())
    assert (
        "later runs are gated, metric by metric, against the first release that measured it"
        in plain
        and results.get_run(passed.run_id).reference_at is None
    )
    moved = " ".join(
        runner.invoke(app, ["eval", "pin", passed.run_id, "--reference"]).output.split()
    )
    assert "is the release later runs of prod are gated against" in moved
    assert results.get_run(passed.run_id).reference_at is not None
    missing = runner.invoke(app, ["eval", "pin", "offline/2026-03-16/prod"])
    assert missing.exit_code == 1 and "not in the results DB" in missing.output
    results.dispose()


def test_a_partial_run_is_pinned_only_when_told_and_each_metric_keeps_a_reference_that_measured_it(
    store,
):
    items = [f"q{i}" for i in range(10)]
    gated = {"metrics": GATED_METRICS, "min_ok": 10}

    def scores(run: EvalRun, metrics=("faithfulness", "recall@5")) -> list[Score]:
        return [s for s in make_scores(run, items) if s.metric in metrics]

    judge_off = make_run(date(2026, 2, 2))
    store.save_run(judge_off, scores(judge_off, ["recall@5"]))
    with pytest.raises(
        ValueError, match="lacks answer_correctness, .*faithfulness, mrr .*pass --partial"
    ):
        store.pin(judge_off.run_id, **gated, expected=FULL_EVAL_METRICS)
    store.pin(
        judge_off.run_id, **gated
    )  # nothing says it lacks anything: no full eval asked, no other run
    store.pin(judge_off.run_id, pinned=False)
    judged = [
        make_run(date(2026, 2, 9), gate_passed=True),
        make_run(date(2026, 2, 16), gate_passed=True),
    ]
    for run in judged:
        store.save_run(run, scores(run))
    # Another run of the target measured faithfulness: this one lacks it.
    with pytest.raises(ValueError, match="lacks faithfulness"):
        store.pin(judge_off.run_id, **gated)
    skipped = make_run(
        date(2026, 2, 3)
    )  # faithfulness asked and every item skipped: it lacks it too
    store.save_run(
        skipped,
        scores(skipped, ["recall@5"])
        + [
            s.model_copy(update={"status": "skipped", "value": None})
            for s in scores(skipped, ["faithfulness"])
        ],
    )
    with pytest.raises(ValueError, match="lacks faithfulness"):
        store.pin(skipped.run_id, metrics=["recall@5", "faithfulness"], min_ok=10)
    assert store.pin(judge_off.run_id, **gated, partial=True).pinned_at is not None
    for run in judged:
        store.pin(run.run_id, **gated)
    # Before: the judge-off release was the reference of every metric, faithfulness "not in the
    # baseline".
    choices = store.references(make_run(), **gated)
    assert [(c.run.run_id, sorted(c.metrics)) for c in choices] == [
        (judge_off.run_id, ["recall@5"]),
        (
            judged[0].run_id,
            ["faithfulness"],
        ),  # the earliest release that measured it, not the latest
    ]
    assert "the reference of faithfulness" in choices[1].why
    assert store.reference_choice(make_run(), **gated).run.run_id == judge_off.run_id
    store.pin(
        judged[1].run_id, **gated, reference=True
    )  # moved: a full release is every metric's reference
    assert [(c.run.run_id, sorted(c.metrics)) for c in store.references(make_run(), **gated)] == [
        (judged[1].run_id, ["faithfulness", "recall@5"])
    ]


def test_a_baseline_shares_the_runs_items_unless_no_earlier_run_does(store):
    proper, renamed = make_run(date(2026, 2, 16)), make_run(date(2026, 2, 23), gate_passed=False)
    store.save_run(proper, make_scores(proper, ["a", "b", "c"]))
    store.save_run(renamed, make_scores(renamed, ["x-a", "x-b", "x-c"]))  # failed: not comparable
    # Without the run's items, the previous run; with them, the previous run that shares them.
    assert store.baseline_for(make_run()).run_id == renamed.run_id
    assert store.baseline_for(make_run(), items=["a", "b", "c"], min_ok=2).run_id == proper.run_id
    # None shares enough: the previous run all the same, so the gate says they are not comparable.
    assert store.baseline_for(make_run(), items=["q", "r"], min_ok=2).run_id == renamed.run_id

"""The results DB on SQLite and on a real PostgreSQL: reruns replace, baselines skip bad runs."""

from __future__ import annotations

import uuid
from datetime import date, datetime, timezone

import pytest
import sqlalchemy as sa

from pipelines.records import Score
from pipelines.stores.results import EvalRun, ResultsStore, ResultsStoreError, eval_runs, eval_scores, run_id

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
    return EvalRun(run_id=run_id(suite, day, target), suite=suite, logical_date=day, target=target,
                   dataset_version="golden-v3", judge_model="judge-70b", generator_model="gen-8b",
                   params={"k": 5, "nota": "índice re-creado"}, finished_at=datetime(2026, 3, 3, 6, 0, tzinfo=timezone.utc),
                   **kw)  # fmt: skip


def make_scores(run: EvalRun, items: list[str], value: float = 0.8) -> list[Score]:
    out = []
    for item in items:
        for metric in ("faithfulness", "recall@5"):
            out.append(Score(run_id=run.run_id, suite=run.suite, item_id=item, stratum="single_hop/es", metric=metric,
                             value=value, status="ok", judge_model=run.judge_model,
                             dataset_version=run.dataset_version))  # fmt: skip
    out.append(Score(run_id=run.run_id, suite=run.suite, item_id=items[0], stratum="single_hop/es",
                     metric="context_recall", value=None, status="failed", error="el juez no respondió (timeout)",
                     judge_model=run.judge_model, dataset_version=run.dataset_version))  # fmt: skip
    return out


def count(store: ResultsStore, table: sa.Table) -> int:
    with store.engine.connect() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one()


def test_a_run_is_named_by_one_id_that_says_what_it_ran():
    assert make_run().run_id == "offline/2026-03-02/prod"
    with pytest.raises(ValueError, match="does not name its run"):
        EvalRun(run_id="scheduled__2026-03-02", suite="offline", logical_date=DAY, target="prod", dataset_version="v")


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
    assert failed.value is None and failed.error == "el juez no respondió (timeout)" and failed.suite == "offline"


def test_other_targets_and_dates_are_separate_runs(store):
    for run in (make_run(), make_run(target="candidate"), make_run(date(2026, 3, 3))):
        store.save_run(run, make_scores(run, ["a"]))
    assert count(store, eval_runs) == 3
    assert store.latest_run("offline").run_id == "offline/2026-03-03/prod"
    assert store.latest_run("offline", target="candidate").run_id == "offline/2026-03-02/candidate"
    assert store.latest_run("offline", before=date(2026, 3, 3), target="prod").run_id == "offline/2026-03-02/prod"
    assert store.latest_run("online") is None
    latest = store.latest_per_target()
    assert {r.run_id for r in latest["offline"]} == {"offline/2026-03-03/prod", "offline/2026-03-02/candidate"}


def test_a_score_of_another_run_is_refused_before_anything_is_written(store):
    run = make_run()
    stray = make_scores(make_run(date(2026, 3, 1)), ["z"])
    with pytest.raises(ResultsStoreError, match="belongs to run 'offline/2026-03-01/prod'"):
        store.save_run(run, make_scores(run, ["a"]) + stray)
    assert count(store, eval_runs) == 0


def test_a_results_db_of_the_two_id_schema_is_refused_with_what_to_do(tmp_path):
    legacy = ResultsStore(f"sqlite:///{tmp_path / 'old.db'}")
    with legacy.engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE eval_runs (run_id VARCHAR PRIMARY KEY, run_key VARCHAR UNIQUE)"))
    with pytest.raises(ResultsStoreError, match="drop the tables eval_scores and eval_runs"):
        legacy.create()
    legacy.dispose()


def test_baseline_is_the_previous_successful_run_that_did_not_fail_its_gate(store):
    runs = [
        make_run(date(2026, 2, 23), gate_passed=True),
        make_run(date(2026, 2, 24)),  # first run of a target: no gate
        make_run(date(2026, 2, 25), gate_passed=False),  # a regression must not become the new normal
        make_run(date(2026, 2, 26), status="failed"),
        make_run(date(2026, 2, 27), target="candidate"),
        make_run(date(2026, 2, 27), suite="online"),
        make_run(date(2026, 3, 9)),
    ]
    for run in runs:
        store.save_run(run, make_scores(run, ["a"]))
    day = lambda r: r.logical_date.isoformat()  # noqa: E731
    assert day(store.baseline_for(make_run())) == "2026-02-24"
    assert store.baseline_for(make_run(date(2026, 2, 23))) is None
    # Trends: successful runs only, the latest N, oldest first.
    assert [day(r) for r in store.runs("offline", 3, target="prod")] == ["2026-02-24", "2026-02-25", "2026-03-09"]
    assert [day(r) for r in store.runs("offline", 10, target="prod", before=DAY)] == ["2026-02-23", "2026-02-24", "2026-02-25"]
    assert [day(r) for r in store.runs("offline", 10, target="prod", status=None)][-2:] == ["2026-02-26", "2026-03-09"]

"""The promise of a run's whole gate : baseline and reference together keep the false-alarm level, a
reference has measured what it gates, drift fails even when every release is pinned, a lost metric
fails every comparison. The simulated rates themselves: `ragwatch bench gate --whole` / `--chain`
(docs/explanation/statistics.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pipelines.evaluation.outputs.summary import run_summary
from pipelines.evaluation.statistics.gate.gated_metrics import GATED_METRICS
from pipelines.evaluation.statistics.gate.level import split_alpha
from pipelines.evaluation.statistics.gate.rule import GATE_ALPHA, MISSING_METRIC
from pipelines.evaluation.statistics.gate.run_gate import compare_with
from ragwatch_harness.bench.run_gate_power import (
    SystemModel,
    format_chain_bench,
    format_whole_gate_bench,
    monte_carlo_error,
    run_chain_bench,
    run_whole_gate_bench,
    whole_scenarios,
)
from tests.unit.pipelines.evaluation.statistics.gate.test_rule import (
    GOOD,
    drifted,
    offline_run,
    record,
    scored,
    store,
)  # noqa: F401  (store: a fixture)


def test_the_baseline_and_the_reference_share_the_gates_alpha(store):  # noqa: F811
    record(store, offline_run(0), scored(offline_run(0), GOOD))
    alone = record(store, offline_run(1), scored(offline_run(1), GOOD))
    assert (
        alone.reference is None and alone.baseline.gate.alpha == GATE_ALPHA
    )  # one comparison keeps all of it
    both = record(store, offline_run(2), scored(offline_run(2), GOOD))
    assert both.baseline.against.run_id == offline_run(1).run_id
    assert both.reference.against.run_id == offline_run(0).run_id
    assert both.alpha == both.baseline.gate.alpha == both.reference.gate.alpha == GATE_ALPHA / 2
    assert "2 comparisons at α = 0.025 each (Bonferroni)" in both.to_dict()["level"]
    assert split_alpha(0) == split_alpha(1) == GATE_ALPHA


def test_compare_with_fails_a_metric_the_baseline_measured_and_the_candidate_lost(store):  # noqa: F811
    base, cand = offline_run(0), offline_run(1)
    base_scores = scored(base, GOOD) + scored(base, GOOD, metric="recall@5")
    lost = scored(cand, GOOD, metric="recall@5")  # no faithfulness row at all
    comparison = compare_with(cand, lost, base, base_scores, role="baseline", chosen="test")
    assert comparison.passed is False
    [faithfulness] = [m for m in comparison.gate.metrics if m.metric == "faithfulness"]
    assert MISSING_METRIC in faithfulness.checks_failed and "gate failed" in comparison.verdict


def test_an_empty_release_is_never_the_reference_and_the_note_says_so(store):  # noqa: F811
    record(store, *drifted(0, "prod"))
    empty = offline_run(1)
    record(
        store, empty, scored(empty, dict.fromkeys(GOOD))
    )  # judge off: every faithfulness skipped
    with pytest.raises(ValueError, match="measured no gated metric"):
        store.pin(empty.run_id, metrics=GATED_METRICS, min_ok=10)  # what `ragwatch eval pin` does
    store.pin(empty.run_id)  # pinned all the same (an older ragwatch did not check)
    # Each release against the one before (the ratchet of
    # tests/unit/pipelines/evaluation/statistics/gate/test_rule.py), each within the tolerance.
    gates = [
        record(store, *drifted(week, "prod"), baseline_run=offline_run(week - 1).run_id)
        for week in range(2, 12)
    ]
    # Before: the empty release was the reference, its comparison vacuous, and ten drops of 0.012
    # passed.
    assert all(g.baseline.passed for g in gates)
    assert gates[-1].reference.against.run_id == offline_run(0).run_id
    assert (
        f"release {empty.run_id} skipped: it measured no gated metric" in gates[-1].reference_note
    )
    assert gates[-1].passed is False and gates[-1].reference.passed is False


def test_pinning_every_release_keeps_the_reference_so_drift_still_fails(store):  # noqa: F811
    gates = []
    for week in range(0, 11):
        run, scores = drifted(week, "prod")
        gates.append(record(store, run, scores))
        if run.gate_passed is not False:
            store.pin(
                run.run_id, metrics=GATED_METRICS, min_ok=10
            )  # a team pinning every weekly release
    # Before: the reference was the latest release, i.e. the baseline, and every week passed.
    assert gates[2].reference.against.run_id == offline_run(0).run_id
    assert "the first release, on golden@v3" in gates[2].reference_note
    assert gates[2].baseline.passed and gates[2].passed is False
    assert all(g.passed is False for g in gates[2:])


def test_the_reference_moves_only_when_told_or_when_a_change_is_accepted(store):  # noqa: F811
    runs = [drifted(week, "prod")[0] for week in range(4)]
    for week, run in enumerate(runs[:3]):
        run.gate_passed = None if week == 0 else True
        store.save_run(run, drifted(week, "prod")[1])
        store.pin(run.run_id)
    assert store.reference_for(runs[3]).run_id == runs[0].run_id  # pins alone do not move it
    store.pin(runs[1].run_id, reference=True)  # `ragwatch eval pin RUN --reference`
    assert store.reference_for(runs[3]).run_id == runs[1].run_id
    store.pin(runs[2].run_id)  # re-pinned later: still a plain release
    assert store.reference_for(runs[3]).run_id == runs[1].run_id
    store.save_run(
        runs[1], drifted(1, "prod")[1]
    )  # a rerun of the reference's date stays the reference
    assert store.get_run(runs[1].run_id).reference_at is not None
    accepted = runs[2]
    accepted.gate_passed = False  # its gate failed and it was pinned: the change was meant
    store.save_run(accepted, drifted(2, "prod")[1])
    assert store.reference_for(runs[3]).run_id == accepted.run_id
    store.pin(runs[1].run_id, pinned=False)
    assert store.get_run(runs[1].run_id).reference_at is None


def test_the_whole_gate_bench_runs_both_comparisons_through_the_store():
    result = run_whole_gate_bench(sizes=(30,), reps=4, scenarios=whole_scenarios()[:2])
    assert [c["both compared"] for c in result["cells"]] == [1.0, 1.0]
    assert (
        result["cells"][1]["gate"] >= result["cells"][1]["baseline"]
    )  # the whole gate fails when either does
    assert "| 30 | no change (false alarms) |" in format_whole_gate_bench(result)


def test_a_weekly_chain_is_gated_week_after_week_and_catches_drift_with_every_release_pinned():
    steady = run_chain_bench(n=30, weeks=3, chains=2)
    assert steady["per_week"][0] is None and len(steady["per_week"]) == 3
    drifting = run_chain_bench(n=30, weeks=5, chains=2, pin_releases=True, drift=0.05)
    assert drifting["any_week"] == 1.0  # −0.05 a week: caught by week 4 against the first release
    assert "Drift caught within the chain" in format_chain_bench(drifting)


def test_a_chain_can_start_with_a_partial_release_and_refresh_its_golden_set():
    system = SystemModel(30, np.random.default_rng(3))
    before = list(system.item_ids)
    system.refresh(0.2, "sim@v2")
    assert (
        system.version == "sim@v2"
        and len(set(before) - set(system.item_ids)) == 6
        and len(system.item_ids) == 30
    )
    result = run_chain_bench(
        n=30,
        weeks=5,
        chains=2,
        pin_releases=True,
        drift=0.05,
        first_partial=True,
        refresh_every=2,
        until_caught=True,
    )
    assert (
        result["caught_by"][-1] == result["any_week"] == 1.0
    )  # −0.05 a week: caught by week 4 across refreshes
    said = format_chain_bench(result)
    assert "week 0 with the judge off, pinned as a partial release" in said
    assert (
        "a golden refresh every 2 weeks retiring 20% of the items" in said
        and "Caught by week" in said
    )
    assert monte_carlo_error(0.5, 100) == pytest.approx(0.098) and monte_carlo_error(
        1.0, 100
    ) == pytest.approx(0.0195, abs=1e-4)


def test_ragwatch_bench_gate_prints_the_whole_gate_and_the_chain(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from pipelines.cli import app

    monkeypatch.setenv("RAGWATCH_HOME", str(tmp_path))
    runner = CliRunner()
    whole = runner.invoke(app, ["bench", "gate", "--whole", "--reps", "1", "--sizes", "30"])
    assert whole.exit_code == 0 and "| 30 | no change (false alarms) |" in whole.output, (
        whole.output
    )
    chain = runner.invoke(
        app,
        [
            "bench",
            "gate",
            "--chain",
            "--reps",
            "1",
            "--weeks",
            "2",
            "--sizes",
            "30",
            "--pin-releases",
        ],
    )
    assert chain.exit_code == 0 and "every passing run pinned as a release" in " ".join(
        chain.output.split()
    )


RECALL = {item: float(n % 5 != 0) for n, item in enumerate(GOOD)}


def test_a_judge_off_first_release_leaves_faithfulness_to_the_first_release_that_measured_it(store):  # noqa: F811
    gates = []
    for week in range(11):
        run, faithfulness = drifted(week, "prod")  # −0.012 a release
        recall = scored(run, RECALL, metric="recall@5")
        gates.append(record(store, run, recall if week == 0 else faithfulness + recall))
        if run.gate_passed is not False:
            store.pin(
                run.run_id, metrics=GATED_METRICS, min_ok=10, partial=week == 0
            )  # week 0: the judge off
    # Before: the judge-off release was the reference of every metric; faithfulness "not gated: the
    # baseline did not measure it" there, and ten releases passed at −0.12.
    third = gates[3]
    assert [(c.against.run_id, c.gate.gated_metrics) for c in third.references] == [
        (offline_run(0).run_id, ["recall@5"]),
        (offline_run(1).run_id, ["faithfulness"]),
    ]
    assert third.alpha == GATE_ALPHA / 3 and "3 comparisons at α = 0.0166667 each" in third.level
    assert (
        third.baseline.passed and third.passed is False
    )  # −0.024 against release 1, −0.012 against the baseline
    assert "the reference of faithfulness" in third.reference_note
    assert all(g.passed is False for g in gates[3:])
    summary = run_summary(
        store.get_run(offline_run(3).run_id), [], items=60
    )  # `ragwatch eval summary`
    assert summary.reference == f"{offline_run(0).run_id}, {offline_run(1).run_id}"
    assert {r.metric: r.passed for r in summary.reference_rows} == {
        "recall@5": True,
        "faithfulness": False,
    }


def test_a_golden_refresh_keeps_the_reference_so_the_drift_so_far_still_counts(store):  # noqa: F811
    # −0.006 a release; every third release a refresh retires 5 items and adds 5 new ones.
    def items(version: int) -> dict[str, float]:
        kept = dict(list(GOOD.items())[5 * version :])
        return kept | {
            f"new{v}-{j}": 0.7 + 0.02 * j for v in range(1, version + 1) for j in range(5)
        }

    gates = []
    for week in range(16):
        run = offline_run(week, version=f"golden@v{week // 3}")
        values = {
            item: v - 0.006 * week + 0.003 * math.sin(7 * n + 3 * week)
            for n, (item, v) in enumerate(items(week // 3).items())
        }
        gates.append(record(store, run, scored(run, values)))
        if run.gate_passed is not False:
            store.pin(run.run_id, metrics=GATED_METRICS, min_ok=10)
    # Before: the first release on each new version became the reference; fifteen releases passed at
    # −0.09.
    assert all(g.passed for g in gates[1:4]) and all(g.passed is False for g in gates[4:])
    last = gates[-1]
    assert last.reference.against.run_id == offline_run(0).run_id
    assert (
        last.reference.scope
        == "compared on the 35 items golden@v0 and golden@v5 share; 25 retired, 25 new not gated"
    )
    assert last.reference.gate.metrics[0].diff == pytest.approx(-0.09, abs=0.004)


def test_a_reference_refreshes_retired_is_passed_over_and_the_note_says_so(store):  # noqa: F811
    originals = list(GOOD.items())
    plan = [
        dict(originals),
        dict(originals[:10]) | {f"b{j}": 0.6 for j in range(20)},
        dict(originals[:5]) | {f"b{j}": 0.6 for j in range(20)} | {f"c{j}": 0.6 for j in range(10)},
    ]
    for week, values in enumerate(plan):
        run = offline_run(week, version=f"golden@v{week}")
        gate = record(store, run, scored(run, values))
        store.pin(run.run_id, metrics=GATED_METRICS, min_ok=10)
    assert gate.reference is None and gate.baseline.against.run_id == offline_run(1).run_id
    assert (
        "the reference is the baseline (the first release, on golden@v1, pinned "
        in gate.reference_note
    )
    assert (
        f"{offline_run(0).run_id} (golden@v0) shares only 5 of this run's items, golden refreshes retired the rest: "
        f"drift before {offline_run(1).run_id} is not gated"
    ) in gate.reference_note

"""The summary rows are the statistics results' own fields: a row read back from the results DB says
what the result said, and a field renamed or retyped in the result changes the row with it."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from pipelines.core.records import Score
from pipelines.evaluation.outputs.summary import (
    GateRow,
    JudgeNoiseRow,
    MetricRow,
    gate_rows,
    judge_noise_rows,
)
from pipelines.evaluation.results.rows import row_from, row_model
from pipelines.evaluation.statistics.aggregates import Aggregate, aggregate
from pipelines.evaluation.statistics.gate.rule import MetricGate, regression_gate
from pipelines.evaluation.statistics.judge_noise import JudgeNoise, judge_noise


def scores(values: dict[str, float], metric: str = "faithfulness") -> list[Score]:
    return [
        Score(
            run_id="r",
            suite="offline",
            dataset_version="v1",
            item_id=item,
            stratum="s",
            metric=metric,
            value=v,
            status="ok",
        )
        for item, v in values.items()
    ]


@pytest.mark.parametrize(
    ("row", "source"), [(MetricRow, Aggregate), (GateRow, MetricGate), (JudgeNoiseRow, JudgeNoise)]
)
def test_every_row_field_has_its_result_field_type(row, source):
    hints = typing.get_type_hints(source)
    declared = {f.name for f in dataclasses.fields(source)}
    for name, field in row.model_fields.items():
        expected = (
            hints[name]
            if name in declared
            else typing.get_type_hints(getattr(source, name).fget)["return"]
        )
        assert field.annotation == expected, name


def test_a_stored_gate_reads_back_as_the_rows_of_its_metrics():
    baseline = scores({f"q{i}": 0.9 for i in range(30)})
    candidate = scores({f"q{i}": 0.9 if i % 3 else 0.4 for i in range(30)})
    gate = regression_gate(candidate, baseline, ["faithfulness"])
    [row] = gate_rows(gate.to_dict())
    [verdict] = gate.metrics
    assert row.model_dump() == {name: getattr(verdict, name) for name in GateRow.model_fields}
    assert (
        row.passed is False
        and row.design == "paired"
        and row.n_pairs == 30
        and row.detectable_drop is not None
    )


def test_an_overall_aggregate_is_its_metric_row():
    [overall] = [
        a for a in aggregate(scores({f"q{i}": i / 10 for i in range(11)})) if a.stratum == "all"
    ]
    row = row_from(MetricRow, overall)
    assert (row.n, row.mean, row.ci_method) == (11, pytest.approx(0.5), "jeffreys-bounded-mean")
    assert row.ci_low < row.mean < row.ci_high


def test_judge_noise_rows_keep_the_verdict_and_enough_the_result_computed():
    noise = judge_noise("faithfulness", [1.0, 0.5] * 6, [1.0, 0.0] * 6, [1.0, 0.5] * 20, None)
    [row] = judge_noise_rows({"metrics": [noise.to_dict()]})
    assert (row.enough, row.verdict, row.noise_share) == (True, noise.verdict, noise.noise_share)


def test_a_row_of_a_name_the_result_lacks_is_refused():
    with pytest.raises(AttributeError, match="no field or property 'means'"):
        row_model("Broken", Aggregate, ("metric", "means"), doc="", module=__name__)

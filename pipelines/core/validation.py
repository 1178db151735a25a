"""Great Expectations, run inside a task on data already staged (never at DAG parse time).

Each stage keeps its own suite next to its code (`traces/quality.py`, `golden/quality.py`); this
module runs a list of expectations on a DataFrame and reports the outcome. Results keep counts
and row ids only: an unexpected *value* in a text column may be PII, so values of the columns
named `sensitive` are never copied into a report or a log.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel

os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
PARTIAL_UNEXPECTED = 5
"""Failing rows (ids) a check names, over all batches."""


class ValidationFailed(RuntimeError):
    """Staged data broke an expectation; nothing was published and the previous version is
    intact."""


class ValidationPassed(BaseModel):
    """What a step returns when its suite passed (a failed suite raises, naming the failures)."""

    suite: str
    expectations: int

    def describe(self) -> str:
        return f"passed ({self.expectations} expectations)"


@dataclass
class ValidationReport:
    suite: str
    success: bool
    checks: list[dict[str, Any]] = field(default_factory=list)

    @property
    def failures(self) -> list[dict[str, Any]]:
        return [c for c in self.checks if not c["success"]]

    def describe(self) -> str:
        if self.success:
            return f"{self.suite}: all {len(self.checks)} expectations passed"
        lines = [f"{self.suite}: {len(self.failures)} of {len(self.checks)} expectations failed"]
        lines += [
            f"  - {c['expectation']}({c.get('column') or ''}): {c['detail']}" for c in self.failures
        ]
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {"suite": self.suite, "success": self.success, "checks": self.checks}

    def passed_or_raise(self, kept_intact: str, staged: Path) -> ValidationPassed:
        """The passed result, or ValidationFailed naming the failures, what stayed intact and where
        the staged files are."""
        if not self.success:
            raise ValidationFailed(
                f"{self.describe()}\nNothing was published; {kept_intact} is intact. "
                f"The staged files stay in {staged} for inspection."
            )
        return ValidationPassed(suite=self.suite, expectations=len(self.checks))


def run_expectations(
    name: str,
    frame: pd.DataFrame,
    expectations: list,
    *,
    index_column: str,
    sensitive: Collection[str] = (),
) -> list[dict[str, Any]]:
    """Validate `frame` against `expectations` in an ephemeral GX context; one check dict per
    expectation."""
    return run_expectations_in_batches(
        name, [frame], expectations, index_column=index_column, sensitive=sensitive
    )


def run_expectations_in_batches(
    name: str,
    frames: Iterable[pd.DataFrame],
    expectations: list,
    *,
    index_column: str,
    sensitive: Collection[str] = (),
) -> list[dict[str, Any]]:
    """Validate each frame of `frames` against the same suite and merge the outcomes, one check per
    expectation.

    Only one frame lives at a time, so a file read in row groups is validated in bounded memory.
    Expectations that compare rows with each other (uniqueness) see one batch only: give them a
    frame of the few columns they need instead. Setting up GX costs seconds, so it is done once.
    """
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    batch_definition = (
        context.data_sources.add_pandas(name)
        .add_dataframe_asset(name)
        .add_batch_definition_whole_dataframe(name)
    )
    suite = context.suites.add(gx.ExpectationSuite(name=name, expectations=expectations))
    merged: list[dict[str, Any]] | None = None
    for frame in frames:
        index_columns = [index_column] if index_column in frame.columns else []
        result = batch_definition.get_batch(batch_parameters={"dataframe": frame}).validate(
            suite,
            result_format={
                "result_format": "SUMMARY",
                "unexpected_index_column_names": index_columns,
                "partial_unexpected_count": PARTIAL_UNEXPECTED,
            },
        )
        checks = [_check(r, index_column, sensitive) for r in result.results]
        merged = (
            checks
            if merged is None
            else [_merge(a, b) for a, b in zip(merged, checks, strict=True)]
        )
    if merged is None:
        raise ValueError(f"{name}: no frame to validate (an empty table is one empty frame)")
    return [_finish(c) for c in merged]


def _merge(first: dict[str, Any], later: dict[str, Any]) -> dict[str, Any]:
    """One expectation's outcome over two batches: failed if either failed, counts added, rows kept
    up to 5."""
    if later["success"]:
        return first
    if first["success"]:
        return later
    if "_failure" not in first or "_failure" not in later:
        return first  # one batch could not run the check: that already says enough
    a, b = first["_failure"], later["_failure"]
    failure = {
        "unexpected_count": (a["unexpected_count"] or 0) + (b["unexpected_count"] or 0),
        "rows": (a["rows"] + b["rows"])[:PARTIAL_UNEXPECTED],
        "examples": (a["examples"] + b["examples"])[:PARTIAL_UNEXPECTED],
        "observed": a["observed"] if a["observed"] is not None else b["observed"],
    }
    return dict(first, _failure=failure)


def _finish(check: dict[str, Any]) -> dict[str, Any]:
    failure = check.pop("_failure", None)
    if failure is not None:
        check["detail"] = json.dumps(failure, default=str)
    return check


def _check(result, index_column: str, sensitive: Collection[str]) -> dict[str, Any]:
    config = result.expectation_config
    column = config.kwargs.get("column")
    details = result.result or {}
    check = {"expectation": config.type, "column": column, "success": bool(result.success)}
    if result.exception_info and result.exception_info.get("raised_exception"):
        check["detail"] = f"could not run: {result.exception_info.get('exception_message')}"
    elif not result.success:
        rows = [
            i[index_column]
            for i in details.get("partial_unexpected_index_list") or []
            if isinstance(i, dict) and i.get(index_column)
        ]
        sample = [] if column in sensitive else details.get("partial_unexpected_list") or []
        # Kept structured until every batch is merged; _finish writes it as JSON.
        check["_failure"] = {
            "unexpected_count": details.get("unexpected_count"),
            "rows": rows,
            "examples": [str(v)[:80] for v in sample],
            "observed": details.get("observed_value"),
        }
    return check

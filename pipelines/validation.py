"""Great Expectations, run inside a task on data already staged (never at DAG parse time).

Each stage keeps its own suite next to its code (`traces/quality.py`, `golden/quality.py`); this
module runs a list of expectations on a DataFrame and reports the outcome. Results keep counts
and row ids only: an unexpected *value* in a text column may be PII, so values of the columns
named `sensitive` are never copied into a report or a log.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel

os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")


class ValidationFailed(RuntimeError):
    """Staged data broke an expectation; nothing was published and the previous version is intact."""


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
        lines += [f"  - {c['expectation']}({c.get('column') or ''}): {c['detail']}" for c in self.failures]
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {"suite": self.suite, "success": self.success, "checks": self.checks}

    def passed_or_raise(self, kept_intact: str, staged: Path) -> ValidationPassed:
        """The passed result, or ValidationFailed naming the failures, what stayed intact and where the staged files are."""
        if not self.success:
            raise ValidationFailed(f"{self.describe()}\nNothing was published; {kept_intact} is intact. "
                                   f"The staged files stay in {staged} for inspection.")  # fmt: skip
        return ValidationPassed(suite=self.suite, expectations=len(self.checks))


def run_expectations(name: str, frame: pd.DataFrame, expectations: list, *, index_column: str,
                     sensitive: Collection[str] = ()) -> list[dict[str, Any]]:
    """Validate `frame` against `expectations` in an ephemeral GX context; one check dict per expectation."""
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    batch_definition = (
        context.data_sources.add_pandas(name).add_dataframe_asset(name).add_batch_definition_whole_dataframe(name)
    )
    suite = context.suites.add(gx.ExpectationSuite(name=name, expectations=expectations))
    index_columns = [index_column] if index_column in frame.columns else []
    result = batch_definition.get_batch(batch_parameters={"dataframe": frame}).validate(
        suite,
        result_format={"result_format": "SUMMARY", "unexpected_index_column_names": index_columns,
                       "partial_unexpected_count": 5},
    )  # fmt: skip
    return [_check(r, index_column, sensitive) for r in result.results]


def _check(result, index_column: str, sensitive: Collection[str]) -> dict[str, Any]:
    config = result.expectation_config
    column = config.kwargs.get("column")
    details = result.result or {}
    check = {"expectation": config.type, "column": column, "success": bool(result.success)}
    if result.exception_info and result.exception_info.get("raised_exception"):
        check["detail"] = f"could not run: {result.exception_info.get('exception_message')}"
    elif not result.success:
        rows = [i[index_column] for i in details.get("partial_unexpected_index_list") or [] if isinstance(i, dict) and i.get(index_column)]
        sample = [] if column in sensitive else details.get("partial_unexpected_list") or []
        check["detail"] = json.dumps(
            {"unexpected_count": details.get("unexpected_count"), "rows": rows,
             "examples": [str(v)[:80] for v in sample], "observed": details.get("observed_value")},
            default=str,
        )  # fmt: skip
    return check

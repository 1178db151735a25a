"""What a run is and what it cost: the header that names it, its token budget, its model usage.

Written by the run's steps (runs/), read by its outputs (summary, report, gauges): kept here, below
both.
"""

from __future__ import annotations

from datetime import date

from pydantic import BaseModel

from pipelines.models.usage import COUNTS, UsageRow


class RunHeader(BaseModel):
    """What names a run and what it evaluated: shared by its metadata and its summary."""

    run_id: str
    suite: str
    logical_date: date
    target: str
    dataset_version: str
    items: int


class RunBudget(BaseModel):
    """How a run's token budget was divided (run.json)."""

    cap: int
    """RAGWATCH_LLM_BUDGET_TOKENS when the run was prepared."""
    prepare_tokens: int = 0
    """Tokens the prepare step charged (the offline system under test's answers)."""
    per_batch: int
    """Each judge batch's share: (cap − prepare_tokens) // batches."""


class RunCost(BaseModel):
    """The usage of a whole run, and the items it evaluated (the per-item figures' denominator)."""

    items: int
    rows: list[UsageRow] = []
    budget: RunBudget | None = None
    """How RAGWATCH_LLM_BUDGET_TOKENS was divided among the run's steps (runs/budget.py); None: no
    cap."""
    skipped_for_budget: int = 0
    """Scores `skipped` with the reason "budget": their model call was not sent because the budget
    was spent."""

    def total(self, count: str) -> float:
        return sum(getattr(row, count) for row in self.rows)

    @property
    def totals(self) -> dict[str, float]:
        return {count: round(self.total(count), 3) for count in COUNTS}

    def per_item(self, count: str) -> float | None:
        return self.total(count) / self.items if self.items else None

    def by_stage(self) -> dict[str, dict[str, float]]:
        """stage -> its counts summed over metrics and models, in the order the stages first
        appear."""
        stages: dict[str, dict[str, float]] = {}
        for row in self.rows:
            counts = stages.setdefault(row.stage, dict.fromkeys(COUNTS, 0))
            for count in COUNTS:
                counts[count] += getattr(row, count)
        return stages

    def by_model(self) -> dict[str, int]:
        """model -> requests sent: what each model's server should have seen."""
        models: dict[str, int] = {}
        for row in self.rows:
            models[row.model] = models.get(row.model, 0) + row.requests
        return models

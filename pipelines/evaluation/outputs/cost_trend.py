"""What a suite's runs cost week by week: requests and tokens per run, from the results DB.

A week is an ISO week (Monday to Sunday) of the runs' logical dates. Per week, over the successful
runs of one suite and target that recorded their cost (runs saved before it was recorded are left
out, and counted): runs, requests sent, cache hits, prompt and completion tokens (as the servers
reported them), items evaluated, and the means per run and per item. A week without such a run is
shown empty, never as 0.
"""

from __future__ import annotations

from datetime import date, timedelta

from pipelines.evaluation.results.run import RunCost
from pipelines.models.usage import RequestCounts
from pipelines.stores.results import ResultsStore

TREND_WEEKS = 8
"""Weeks the trend shows: two months, enough to see a prompt or model change against the weeks
before it."""


class CostWeek(RequestCounts):
    """The request counts summed over the week's runs with a recorded cost."""

    week: date
    """The Monday the ISO week starts on."""
    runs: int = 0
    """Runs of the week with a recorded cost."""
    unrecorded_runs: int = 0
    """Runs of the week saved before their cost was recorded (not in the sums)."""
    items: int = 0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def per_run(self, count: str) -> float | None:
        return getattr(self, count) / self.runs if self.runs else None

    def per_item(self, count: str) -> float | None:
        return getattr(self, count) / self.items if self.items else None


def week_of(day: date) -> date:
    return day - timedelta(days=day.weekday())


def weekly_cost(
    store: ResultsStore, suite: str, target: str, *, until: date, weeks: int = TREND_WEEKS
) -> list[CostWeek]:
    """The `weeks` ISO weeks up to the one holding `until` (oldest first), each with its runs'
    summed cost."""
    last = week_of(until)
    trend = {
        last - timedelta(weeks=n): CostWeek(week=last - timedelta(weeks=n))
        for n in range(weeks - 1, -1, -1)
    }
    # A run a day at most per target: `weeks` × 7 runs cover the window.
    for run in store.runs(suite, weeks * 7, target=target, before=until + timedelta(days=1)):
        week = trend.get(week_of(run.logical_date))
        if week is None:
            continue
        if not run.cost:
            week.unrecorded_runs += 1
            continue
        cost = RunCost.model_validate(run.cost)
        week.runs += 1
        week.items += cost.items
        for count in RequestCounts.model_fields:
            setattr(week, count, getattr(week, count) + int(cost.total(count)))
    return list(trend.values())

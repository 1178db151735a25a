"""The data interval a ragwatch run covers, also when the run was triggered without a logical date.

Airflow 3 lets a person trigger a run with no logical date: the REST API and the CLI with
`logical_date: null`, or the UI's trigger form with the date cleared. Such a run has no data
interval. A ragwatch DAG then covers the latest interval of its schedule that was complete when
the run was triggered: the one Airflow gives a manual run with a logical date, and the one its
scheduler runs first when the DAG is unpaused.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import NamedTuple

import pendulum
from croniter import croniter


class Interval(NamedTuple):
    start: datetime
    end: datetime


def latest_complete_interval(expression: str, timezone: str, at: datetime) -> Interval:
    """The last interval of the cron schedule `expression` (in `timezone`) that ended at or before
    `at`."""
    tz = pendulum.timezone(timezone)
    local = pendulum.instance(at).in_timezone(tz).naive()
    # croniter's get_prev is strictly before its start: a microsecond on, `at` on a boundary ends
    # the interval.
    end = croniter(expression, start_time=local + timedelta(microseconds=1)).get_prev(datetime)
    start = croniter(expression, start_time=end).get_prev(datetime)
    return Interval(_aware(start, tz), _aware(end, tz))


def covered_interval(context: dict) -> Interval:
    """The interval the running task's DAG run covers: its data interval, or for a run triggered
    without a logical date, the latest complete interval of the DAG's schedule when the run was
    triggered."""
    start, end = context.get("data_interval_start"), context.get("data_interval_end")
    if start is not None and end is not None:
        return Interval(start, end)
    timetable = context["dag"].timetable
    expression, timezone = (
        getattr(timetable, "expression", None),
        getattr(timetable, "timezone", None),
    )
    if expression is None:
        raise ValueError(
            f"this run of {context['dag'].dag_id} has no logical date and its schedule has no intervals: "
            "trigger it with a logical date (the day to cover)"
        )
    return latest_complete_interval(expression, str(timezone), context["dag_run"].run_after)


def current_interval() -> Interval:
    """`covered_interval` of the task that is running now."""
    from airflow.sdk import get_current_context

    return covered_interval(get_current_context())


def _aware(naive: datetime, tz) -> datetime:
    return pendulum.instance(naive, tz=tz).in_timezone("UTC")

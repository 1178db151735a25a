"""The stack tests' dates, derived from the DAGs' own schedules rather than from the wall clock.

When a DAG is unpaused, the scheduler runs the latest interval of its schedule complete at that
moment. A test that expects "yesterday", or triggers a run ending "now", shares a date with that
run whenever an interval ends that day: on a Monday after 04:00 UTC, offline_eval's "next week"
run took the scheduled run's date and run id. Here every date comes from the schedules Airflow
parses, and tests/unit/plugins/ragwatch_airflow/test_intervals.py runs this under a frozen clock.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import cache

import pendulum
from croniter import croniter
from ragwatch_airflow.intervals import Interval, latest_complete_interval

from tests.support.stack import ROOT

STACK_SESSION = timedelta(minutes=20)
"""How long the stack tests run on a loaded two-core machine, with margin: no schedule may fire
inside."""


@cache
def schedules() -> dict[str, tuple[str, str]]:
    """(cron expression, timezone) of every ragwatch DAG, as Airflow parses the DAG files: the time
    schedule of an asset-or-time DAG (golden_build) included."""
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(ROOT / "dags"))
    assert not bag.import_errors, bag.import_errors
    found = {}
    for dag_id, dag in bag.dags.items():
        timetable = getattr(dag.timetable, "timetable", dag.timetable)
        found[dag_id] = (timetable.expression, str(timetable.timezone))
    return found


def first_interval(dag_id: str, unpaused_at: datetime) -> Interval:
    """The interval the scheduler runs first for `dag_id` unpaused at `unpaused_at` (catchup
    off)."""
    return latest_complete_interval(*schedules()[dag_id], unpaused_at)


def following_interval(dag_id: str, end: datetime) -> Interval:
    """The interval of `dag_id`'s schedule that starts at `end`: what its scheduler runs next."""
    expression, timezone = schedules()[dag_id]
    return latest_complete_interval(expression, timezone, _next_fire(expression, timezone, end))


def previous_days(day, count: int) -> list:
    """The `count` days before `day`, oldest first: a backfill of the days before the scheduled
    one."""
    return [day - timedelta(days=n) for n in range(count, 0, -1)]


def next_fire(after: datetime) -> tuple[datetime, str]:
    """The first moment after `after` at which some DAG's schedule fires, and that DAG."""
    return min(
        (_next_fire(expression, tz, after), dag_id)
        for dag_id, (expression, tz) in schedules().items()
    )


def quiet_start(now: datetime, window: timedelta = STACK_SESSION) -> datetime:
    """The earliest moment from `now` on after which no schedule fires for `window`: a scheduled run
    that starts mid-session (midnight's trace_sampling, Monday's golden_build) would change what the
    tests read."""
    start = now
    while (fire := next_fire(start)[0]) <= start + window:
        start = fire + timedelta(seconds=30)  # the scheduler has created that run by then
    return start


def _next_fire(expression: str, timezone: str, after: datetime) -> datetime:
    tz = pendulum.timezone(timezone)
    local = pendulum.instance(after).in_timezone(tz).naive()
    return pendulum.instance(
        croniter(expression, start_time=local).get_next(datetime), tz=tz
    ).in_timezone("UTC")

"""The date logic under a frozen clock: every weekday, a Monday either side of offline_eval's 04:00
UTC boundary, and month and year ends. Airflow's own timetables are the judge: the interval its
scheduler runs first after an unpause, and the one it gives a manual run."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
import time_machine
from ragwatch_airflow.intervals import covered_interval

from pipelines.stores.results import run_id
from tests.support.schedule import (
    STACK_SESSION,
    first_interval,
    following_interval,
    next_fire,
    previous_days,
    quiet_start,
    schedules,
)
from tests.support.stack import ROOT

TIME_SCHEDULED = ("trace_sampling", "online_eval", "offline_eval")
SCHEDULE = ("expression", "timezone")
CLOCKS = [
    *(
        datetime(2026, 12, 7, 12, tzinfo=UTC) + timedelta(days=d) for d in range(7)
    ),  # Monday to Sunday, noon
    datetime(2026, 12, 7, 3, 59, 59, tzinfo=UTC),
    datetime(2026, 12, 7, 4, 0, 0, tzinfo=UTC),  # on offline_eval's boundary
    datetime(2026, 12, 7, 4, 0, 1, tzinfo=UTC),
    datetime(2026, 12, 7, 7, 5, tzinfo=UTC),  # the Monday morning CI once failed on
    datetime(2026, 11, 30, 23, 59, 59, tzinfo=UTC),  # a month's last second
    datetime(2026, 12, 1, 0, 0, 1, tzinfo=UTC),
    datetime(2026, 12, 31, 23, 59, 59, tzinfo=UTC),  # a year's last second
    datetime(2027, 1, 1, 0, 0, 0, tzinfo=UTC),
    datetime(
        2027, 1, 4, 4, 30, tzinfo=UTC
    ),  # the first Monday of a year: a week that spans two years ends
]


@pytest.fixture(scope="module")
def core_timetables():
    """The scheduler's own timetables of the DAG files (Airflow's core classes, as the scheduler
    holds them)."""
    from airflow.dag_processing.dagbag import DagBag
    from airflow.serialization.encoders import coerce_to_core_timetable

    schedules()  # the DAG folder parses, with plugins/ on the path
    bag = DagBag(dag_folder=str(ROOT / "dags"))
    return {
        d: (coerce_to_core_timetable(bag.dags[d].timetable), bag.dags[d].start_date)
        for d in TIME_SCHEDULED
    }


def as_pair(interval) -> tuple[datetime, datetime]:
    return (
        datetime.fromtimestamp(interval.start.timestamp(), UTC),
        datetime.fromtimestamp(interval.end.timestamp(), UTC),
    )


@pytest.mark.airflow
@pytest.mark.parametrize("clock", CLOCKS, ids=lambda c: c.strftime("%a-%Y-%m-%dT%H:%M:%S"))
def test_dates_follow_the_schedule_on_every_day_and_hour(clock, core_timetables):
    from airflow.timetables.base import TimeRestriction

    with time_machine.travel(clock, tick=False):
        assert datetime.now(UTC) == clock
        for dag_id, (timetable, start_date) in core_timetables.items():
            unpaused = timetable.next_dagrun_info(
                last_automated_data_interval=None,
                restriction=TimeRestriction(earliest=start_date, latest=None, catchup=False),
            ).data_interval
            manual = timetable.infer_manual_data_interval(run_after=clock)
            ours = first_interval(dag_id, clock)
            assert as_pair(ours) == as_pair(unpaused) == as_pair(manual), (dag_id, clock)

            # A run triggered with no logical date covers that same interval.
            context = {
                "dag": SimpleNamespace(
                    dag_id=dag_id,
                    timetable=SimpleNamespace(**dict(zip(SCHEDULE, schedules()[dag_id]))),
                ),
                "dag_run": SimpleNamespace(run_after=clock),
                "data_interval_start": None,
                "data_interval_end": None,
            }
            assert covered_interval(context) == ours

            following = following_interval(dag_id, ours.end)
            assert following.start == ours.end and following.end > clock

        # "Next week's" offline eval (named by its interval's end) is another run than the scheduled
        # one.
        scheduled = first_interval("offline_eval", clock)
        next_week = following_interval("offline_eval", scheduled.end)
        assert run_id("offline", next_week.end.date(), "t") != run_id(
            "offline", scheduled.end.date(), "t"
        )

        # The scheduled day is yesterday; the backfilled days come before it.
        day = first_interval("trace_sampling", clock).start.date()
        assert day == clock.date() - timedelta(days=1)
        assert previous_days(day, 2) == [day - timedelta(days=2), day - timedelta(days=1)]

        # The stack starts when no schedule fires within its session.
        start = quiet_start(clock)
        fire, _ = next_fire(start)
        assert start >= clock and fire > start + STACK_SESSION


def test_a_run_with_a_data_interval_covers_it():
    start, end = datetime(2026, 12, 6, tzinfo=UTC), datetime(2026, 12, 7, tzinfo=UTC)
    assert tuple(covered_interval({"data_interval_start": start, "data_interval_end": end})) == (
        start,
        end,
    )


def test_a_run_without_a_logical_date_on_a_schedule_without_intervals_says_what_to_set():
    context = {
        "dag": SimpleNamespace(dag_id="golden_build", timetable=SimpleNamespace()),
        "dag_run": SimpleNamespace(run_after=datetime(2026, 12, 7, tzinfo=UTC)),
        "data_interval_start": None,
        "data_interval_end": None,
    }
    with pytest.raises(ValueError, match="trigger it with a logical date"):
        covered_interval(context)

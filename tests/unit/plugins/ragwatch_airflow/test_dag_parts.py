"""Every ragwatch task is retried after a lost worker within two minutes; a verdict is not
retried."""

from __future__ import annotations

from datetime import timedelta

import pytest
import yaml
from airflow.sdk.exceptions import AirflowFailException
from ragwatch_airflow.dag_parts import fail_now_on

from pipelines.core.validation import ValidationFailed
from tests.support.schedule import schedules
from tests.support.stack import ROOT

DETECTION_INTERVAL_S = (
    10  # Airflow's [scheduler] task_instance_heartbeat_timeout_detection_interval default
)


def test_a_verdict_fails_at_once_and_anything_else_is_left_to_the_retries():
    with (
        pytest.raises(AirflowFailException, match="2 expectations failed"),
        fail_now_on(ValidationFailed),
    ):
        raise ValidationFailed("2 expectations failed")
    with pytest.raises(ConnectionError), fail_now_on(ValidationFailed):
        raise ConnectionError("the results database went away")


@pytest.mark.airflow
def test_a_task_whose_worker_died_is_retried_within_two_minutes():
    from airflow.dag_processing.dagbag import DagBag

    schedules()  # the DAG folder parses, with plugins/ on the path
    bag = DagBag(dag_folder=str(ROOT / "dags"))
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    common = compose["x-airflow-common"]["environment"]
    heartbeat_timeout = int(common["AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT"])
    for dag in bag.dags.values():
        for task in dag.tasks:
            assert task.retries >= 1, (
                f"{dag.dag_id}.{task.task_id} fails its run when its worker is lost"
            )
            # Exponential backoff waits between the delay and twice it before the first retry.
            first_retry = (
                2 * task.retry_delay if task.retry_exponential_backoff else task.retry_delay
            )
            worst = timedelta(seconds=heartbeat_timeout + DETECTION_INTERVAL_S) + first_retry
            assert worst <= timedelta(minutes=2), (dag.dag_id, task.task_id, worst)

"""The host name a Celery worker of `make up EXECUTOR=celery` records on the task instances it runs.

Each container of docker-compose.yml has a host name of its own; the workers deploy/local_stack/
starts share one machine's, so each names itself (AIRFLOW__CORE__HOSTNAME_CALLABLE points here and
RAGWATCH_STACK_WORKER holds the name): the task instances then say which worker ran them, as they
would on several machines.
"""

import os


def hostname() -> str:
    return os.environ["RAGWATCH_STACK_WORKER"]

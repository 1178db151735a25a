from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

from pipelines.core.settings import Settings
from tests.support.services import start_postgres, start_pushgateway

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(
    0, str(ROOT / "plugins")
)  # where Airflow puts it: tests import `ragwatch_airflow` as tasks do
# The checkout's harness (harness/, a distribution of its own) for the commands the tests start too,
# as pytest's `pythonpath` gives it to this process: `python -m pipelines.cli bench ...` runs this
# checkout's, not an installed one.
os.environ["PYTHONPATH"] = os.pathsep.join(
    filter(None, [os.environ.get("PYTHONPATH"), str(ROOT / "harness")])
)
# The suite runs on what it sets up itself, never on a developer's or CI machine's leftovers: a
# RAGWATCH_* variable exported for `make up` (a Pushgateway, a vLLM URL) would redirect the tests'
# settings there.
for _name in [n for n in os.environ if n.startswith("RAGWATCH_")]:
    del os.environ[_name]
os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DVC_NO_ANALYTICS", "1")
# In-process Airflow (DagBag) must not create ~/airflow: give it a throwaway home, gone with the
# process (each xdist worker makes one).
os.environ["AIRFLOW_HOME"] = tempfile.mkdtemp(prefix="ragwatch-airflow-")
atexit.register(shutil.rmtree, os.environ["AIRFLOW_HOME"], ignore_errors=True)
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(ROOT / "dags")
# Property tests draw the same examples on every run, so CI passes or fails on the code, not on a
# random draw; `pytest --hypothesis-profile=explore` draws new ones (and keeps what it finds in
# .hypothesis/).
hypothesis_settings.register_profile("ci", derandomize=True, database=None)
hypothesis_settings.register_profile("explore", derandomize=False)
hypothesis_settings.load_profile("ci")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Embedded settings isolated in a temporary RAGWATCH_HOME."""
    return Settings(home=tmp_path / "home", anonymizer_key="test-key-not-secret")


@pytest.fixture(scope="session")
def postgres():
    pg = start_postgres()
    try:
        yield pg
    finally:
        pg.stop()


@pytest.fixture(scope="session")
def pushgateway_server():
    gateway = start_pushgateway()
    try:
        yield gateway
    finally:
        gateway.stop()


@pytest.fixture
def pushgateway(pushgateway_server):
    """The session's Pushgateway, emptied for each test: a test that finds a group some other test
    pushed passes or fails with the order the tests ran in (the order differs between runs and
    workers)."""
    pushgateway_server.wipe()
    return pushgateway_server


@pytest.fixture(scope="session")
def stack(request):
    """The `make up` stack (tests/support/stack.py), started once per session and shared by the
    stack tests; `make down`'s code stops it at the end and must leave no process of it running."""
    from tests.support.stack import start_stack, stop_stack

    session = start_stack()
    try:
        yield session
    finally:
        left = stop_stack(session, failed=request.session.testsfailed > 0)
        assert not left, f"`make down` left processes of the stack running: {left}"


# The files that take longest start first (`make test` runs one file per pytest-xdist worker at a
# time): the `make up` stack and the embedded Airflow runs wait on real schedulers for minutes, and
# started last they would leave the other worker idle at the end.
SLOW_FIRST = (
    "test_stack.py",
    "test_dags.py",
    "test_daily_heldout_help.py",
    "test_golden.py",
    "test_offline_eval.py",
    "test_bench_eval.py",
)


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(
        key=lambda item: rank.get(item.path.name, len(SLOW_FIRST))
    )  # stable: the rest keep their order

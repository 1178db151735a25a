"""Concurrent first runs on a fresh data workspace: the DAG's `version` step in several processes at
once.

The trial that found it: `make up`, then a two-day backfill while the first scheduled run started;
one `version` task failed with "remote 'storage' already exists" and passed on retry.
"""

import fcntl
import logging
import multiprocessing
from datetime import date, timedelta

import pytest

from pipelines.core.settings import Settings
from pipelines.core.versioning import VersioningError, git, remote_url, workspace_lock
from pipelines.core.workspace import Workspace
from pipelines.traces import steps
from tests.support.workspace_data import write_promoted_partition

DAYS = [
    date(2026, 11, 18) + timedelta(days=i) for i in range(3)
]  # the first scheduled run and a two-day backfill


def _first_run(home: str, remote: str, day: date, partition: str, start, results) -> None:
    """One Airflow task process: the trace_sampling DAG's `version` task for `day`, with its log
    kept."""
    said = []

    class Keep(logging.Handler):
        def emit(self, record):
            said.append(f"{record.levelname} {record.getMessage()}")

    logging.getLogger("pipelines").addHandler(Keep())
    logging.getLogger("pipelines").setLevel(logging.INFO)
    settings = Settings(home=home, dvc_remote=remote, anonymizer_key="test-key-not-secret")
    start.wait()
    try:
        steps.version_trace_sample(settings, steps.PromotedSample(day=day, partition=partition))
        results.put((day, "ok", said))
    except Exception as exc:  # reported to the test, which names it
        results.put((day, f"{type(exc).__name__}: {exc}", said))


def test_first_runs_started_at_once_on_a_fresh_workspace_all_version_without_a_retry(
    settings, tmp_path
):
    remote = tmp_path / "remote"
    workspace = Workspace.from_settings(settings)
    partitions = {
        day: str(write_promoted_partition(workspace, day)) for day in DAYS
    }  # promoted, nothing versioned yet
    assert not (workspace.root / ".git").exists()
    context = multiprocessing.get_context("fork")  # how Airflow's executors start task processes
    start, results = context.Barrier(len(DAYS)), context.Queue()
    runs = [
        context.Process(
            target=_first_run,
            args=(str(settings.home), str(remote), day, partitions[day], start, results),
        )
        for day in DAYS
    ]
    for run in runs:
        run.start()
    outcomes = [results.get(timeout=300) for _ in runs]
    for run in runs:
        run.join(timeout=60)

    assert {day: outcome for day, outcome, _ in outcomes} == {day: "ok" for day in DAYS}
    said = [line for _, _, lines in outcomes for line in lines]
    assert not [line for line in said if not line.startswith("INFO")], said  # no retry, no warning
    assert any("waiting for the data workspace lock" in line for line in said), (
        said
    )  # the runs did overlap
    # One repository: initialised once, one commit per day, the remote set once, nothing left
    # uncommitted.
    subjects = git("log", "--format=%s", cwd=workspace.root).splitlines()
    assert sorted(subjects) == [
        "ragwatch: initialise data workspace",
        *(f"traces: sample of {day}" for day in DAYS),
    ]
    config = (workspace.root / ".dvc" / "config").read_text()
    assert (
        config.count("['remote ") == 1
        and config.count("remote = storage") == 1
        and remote_url(workspace) == str(remote)
    )
    assert git("status", "--porcelain", "--ignored=no", cwd=workspace.root) == ""
    for day in DAYS:
        md5 = workspace.dvc_md5(workspace.traces_partition(day).root)
        assert (remote / "files" / "md5" / md5[:2] / md5[2:]).is_file()  # each day's listing pushed


def test_a_workspace_locked_too_long_fails_naming_the_holder(settings):
    workspace = Workspace(settings.resolved_workspace)
    workspace.root.mkdir(parents=True)
    with workspace.lock_file.open("w") as held:  # another process's hold: a descriptor of its own
        fcntl.flock(held, fcntl.LOCK_EX)
        held.write("pid 4242 on worker-2 since 2026-12-02T10:00:00Z\n")
        held.flush()
        with pytest.raises(VersioningError, match="stayed locked for 0 s by pid 4242 on worker-2"):
            with workspace_lock(workspace, wait_s=0.3):
                pass
    with (
        workspace_lock(workspace),
        workspace_lock(workspace),
    ):  # free again, and re-entrant within a process
        assert "pid" in workspace.lock_file.read_text()

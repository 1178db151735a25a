"""Staging left by killed runs: the next run removes it, and never an attempt that is still
writing."""

import os
import signal
import subprocess
import sys
import time
from datetime import date, timedelta

import pytest

from pipelines.core.workspace import Workspace
from pipelines.stores.traces import TraceStore
from pipelines.traces import steps
from pipelines.traces.stale_attempts import STALE_AFTER, remove_stale_attempts
from ragwatch_harness.demo.traces import generate_store_rows
from tests.conftest import ROOT

DAY = date(2026, 11, 20)


def age(folder, by: timedelta) -> None:
    """Make the folder and everything in it look last written `by` ago."""
    then = time.time() - by.total_seconds()
    for path in (folder, *folder.rglob("*")):
        os.utime(path, (then, then))


def attempt_folders(workspace: Workspace, day: date, attempt: str):
    return workspace.traces_staging(day, attempt).root, workspace.traces_selection(
        day, attempt
    ).root


def test_only_attempts_untouched_for_longer_than_the_threshold_are_removed(tmp_path):
    workspace = Workspace(tmp_path / "workspace")
    for attempt in ("killed", "validating", "sharding"):
        for folder in attempt_folders(workspace, DAY, attempt):
            (folder / "tmp").mkdir(parents=True)
            (folder / "tmp" / "part-00000.parquet").write_bytes(b"rows")
    for folder in attempt_folders(workspace, DAY, "killed"):
        age(folder, STALE_AFTER + timedelta(hours=1))
    for folder in attempt_folders(workspace, DAY, "validating"):
        age(folder, STALE_AFTER - timedelta(hours=1))
    for folder in attempt_folders(
        workspace, DAY, "sharding"
    ):  # old folders, but a part being written right now
        age(folder, STALE_AFTER * 3)
        os.utime(folder / "tmp" / "part-00000.parquet")

    removed = remove_stale_attempts(workspace)
    assert removed == ["dt=2026-11-20.killed", "dt=2026-11-20.killed.selection"]
    left = sorted(p.name for p in workspace.traces_staging_root.iterdir())
    assert left == [
        f"dt={DAY}.{a}{s}" for a in ("sharding", "validating") for s in ("", ".selection")
    ]
    assert remove_stale_attempts(Workspace(tmp_path / "nothing-staged-yet")) == []


@pytest.fixture
def store_settings(settings):
    writer = TraceStore.from_settings(settings, read_only=False)
    writer.create_table()
    writer.insert_rows(generate_store_rows(days=1, per_day=60, end=DAY + timedelta(days=1), seed=3))
    return settings


def test_a_rerun_removes_what_a_killed_run_staged_and_leaves_a_concurrent_attempt_alone(
    store_settings,
):
    workspace = Workspace.from_settings(store_settings)
    killed = steps.select_trace_sample(store_settings, DAY, rate=1.0)
    steps.write_trace_shard(
        store_settings, killed[0]
    )  # then killed: no merge, no promotion, no cleanup
    concurrent = steps.select_trace_sample(
        store_settings, DAY, rate=1.0
    )  # a backfill of the same day, running
    killed_folders = attempt_folders(workspace, DAY, killed[0].attempt)
    assert (
        all(folder.exists() for folder in killed_folders)
        and workspace.traces_staging(DAY, killed[0].attempt).parts
    )
    for folder in killed_folders:
        age(folder, timedelta(days=2))

    rerun = steps.select_trace_sample(store_settings, DAY, rate=1.0)
    assert not any(folder.exists() for folder in killed_folders)
    for attempt in (concurrent[0].attempt, rerun[0].attempt):
        assert workspace.traces_selection(DAY, attempt).plan.exists()


def test_an_attempt_is_removed_at_once_when_its_owner_process_died_and_never_while_it_lives(
    tmp_path,
):
    workspace = Workspace(tmp_path / "workspace")
    for folder in attempt_folders(workspace, DAY, "owned"):
        folder.mkdir(parents=True)
    hold = (
        "import sys, time; from datetime import date; from pipelines.core.workspace import Workspace; "
        "from pipelines.traces.stale_attempts import own_attempt; from pathlib import Path\n"
        f"with own_attempt(Workspace(Path({str(workspace.root)!r})), date.fromisoformat({str(DAY)!r}), 'owned'):\n"
        "    print('held', flush=True); time.sleep(60)"
    )
    owner = subprocess.Popen(
        [sys.executable, "-c", hold], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    try:
        assert owner.stdout.readline().strip() == "held"
        assert remove_stale_attempts(workspace) == []  # fresh folders, and their owner alive
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        assert remove_stale_attempts(workspace) == [
            "dt=2026-11-20.owned",
            "dt=2026-11-20.owned.selection",
        ]
        assert not any(workspace.traces_staging_root.iterdir())  # the owner file too
    finally:
        owner.kill()
        owner.wait()

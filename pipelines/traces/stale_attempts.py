"""Staging folders that killed runs left behind, removed by a later run.

Each sampling attempt stages its selection and its partition in folders of its own
(`<day>.<attempt>`), so two runs of the same day never share one. A run that fails cleans up after
itself; a run that is killed (OOM, a lost worker, `kill -9`) cannot, and no later attempt has its
id. Every run therefore removes, when it starts, the attempts that are certainly dead:
- an attempt that runs in one process (`ragwatch traces sample`) holds a `flock` on its owner file
  (`<day>.<attempt>.owner`) from selection to promotion; the kernel drops the lock when the process
  dies, so the next run removes that attempt at once, and never one whose process is alive;
- an attempt without an owner file spans several Airflow tasks, on any worker, with no process alive
  between them to hold a lock: it is dead once nothing was written in it for `STALE_AFTER`. A live
  attempt writes all the time while its shards run (parts appear as they are written), then waits at
  most for its validation and for a queued `promote` task: hours, not a day. Removing a live attempt
  could only fail that run, which a rerun repairs; keeping a dead one costs disk only, so the
  threshold errs long.
"""

from __future__ import annotations

import fcntl
import logging
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, timedelta
from pathlib import Path

from pipelines.core.workspace import Workspace

log = logging.getLogger(__name__)
STALE_AFTER = timedelta(hours=24)
OWNER = ".owner"
SELECTION = ".selection"


def last_written(folder: Path) -> float:
    """The newest modification time of the folder and of anything in it (0 if it vanished
    meanwhile)."""
    newest = 0.0
    for path in (folder, *folder.rglob("*")):
        try:
            newest = max(newest, path.lstat().st_mtime)
        except FileNotFoundError:  # its own run removed it while we looked
            continue
    return newest


@contextmanager
def own_attempt(workspace: Workspace, day: date, attempt: str) -> Iterator[None]:
    """Hold the attempt's owner lock while this process stages and promotes it."""
    staged = workspace.traces_staging(day, attempt).root
    owner = staged.with_name(f"{staged.name}{OWNER}")
    owner.parent.mkdir(parents=True, exist_ok=True)
    with open(owner, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            owner.unlink(missing_ok=True)


def _owner_died(owner: Path) -> bool:
    """Whether the owner file's lock is free: its process ended (a live one holds it)."""
    try:
        with open(owner) as handle:  # read-only: never recreates a file its run just removed
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except FileNotFoundError:  # its run finished meanwhile and removed it
        return False
    return True


def remove_stale_attempts(workspace: Workspace, stale_after: timedelta = STALE_AFTER) -> list[str]:
    """Remove every attempt whose owner process died, and every other attempt's staging and
    selection folder untouched for `stale_after`; returns the folders' names."""
    staging = workspace.traces_staging_root
    cutoff = time.time() - stale_after.total_seconds()
    removed = []
    for owner in sorted(staging.glob(f"dt=*{OWNER}")) if staging.exists() else []:
        if _owner_died(owner):
            attempt = owner.name.removesuffix(OWNER)
            for folder in (staging / attempt, staging / f"{attempt}{SELECTION}"):
                if folder.is_dir():
                    log.warning(
                        "removing %s, staged by a run whose process ended before it finished",
                        folder.name,
                    )
                    shutil.rmtree(folder, ignore_errors=True)
                    removed.append(folder.name)
            owner.unlink(missing_ok=True)
    for folder in sorted(staging.glob("dt=*")) if staging.exists() else []:
        attempt = folder.name.removesuffix(SELECTION)
        if (
            folder.is_dir()
            and not (staging / f"{attempt}{OWNER}").exists()
            and last_written(folder) < cutoff
        ):
            log.warning(
                "removing %s, staged by a run that stopped over %s ago", folder.name, stale_after
            )
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder.name)
    return removed

"""Staging folders that killed runs left behind, removed by a later run.

Each sampling attempt stages its selection and its partition in folders of its own (`<day>.<attempt>`), so two
runs of the same day never share one. A run that fails cleans up after itself; a run that is killed (OOM, a lost
worker, `kill -9`) cannot, and no later attempt has its id. Every run therefore removes, when it starts, every
attempt of any day that has not been written to for `STALE_AFTER`.

Age, not a lock, tells a dead attempt from a live one: an attempt spans several Airflow tasks, on any worker, with
no process alive between them to hold a lock. A live attempt writes all the time while its shards run (parts
appear as they are written), then waits at most for its validation and for a queued `promote` task: hours, not a
day. Removing a live attempt could only fail that run, which a rerun repairs; keeping a dead one costs disk only,
so the threshold errs long.
"""

from __future__ import annotations

import logging
import shutil
import time
from datetime import timedelta
from pathlib import Path

from pipelines.workspace import Workspace

log = logging.getLogger(__name__)
STALE_AFTER = timedelta(hours=24)


def last_written(folder: Path) -> float:
    """The newest modification time of the folder and of anything in it (0 if it vanished meanwhile)."""
    newest = 0.0
    for path in (folder, *folder.rglob("*")):
        try:
            newest = max(newest, path.lstat().st_mtime)
        except FileNotFoundError:  # its own run removed it while we looked
            continue
    return newest


def remove_stale_attempts(workspace: Workspace, stale_after: timedelta = STALE_AFTER) -> list[str]:
    """Remove every attempt's staging and selection folder untouched for `stale_after`; returns their names."""
    staging = workspace.traces_staging_root
    cutoff = time.time() - stale_after.total_seconds()
    removed = []
    for folder in sorted(staging.glob("dt=*")) if staging.exists() else []:
        if folder.is_dir() and last_written(folder) < cutoff:
            log.warning("removing %s, staged by a run that stopped over %s ago", folder.name, stale_after)
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder.name)
    return removed

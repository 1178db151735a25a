"""Runs of the same day stage in their own folders and publish atomically: a reader never finds the
partition missing, whoever promotes and however often."""

from __future__ import annotations

import threading
from datetime import date

from pipelines.core.workspace import Workspace
from pipelines.stores.partitions import promote

DAY = date(2026, 3, 1)


def staged_copy(workspace: Workspace, attempt: str, body: str):
    paths = workspace.traces_staging(DAY, attempt)
    paths.root.mkdir(parents=True)
    paths.manifest.write_text(body)
    return paths.root


def test_concurrent_promotions_of_one_day_never_leave_the_partition_missing(tmp_path):
    workspace = Workspace(tmp_path)
    final = workspace.traces_partition(DAY)
    promote(staged_copy(workspace, "first", "0"), final.root)
    missing, done = [], threading.Event()

    def reader():
        while not done.is_set():
            if not final.manifest.exists():
                missing.append(1)

    def writer(name: str):
        for n in range(150):
            promote(staged_copy(workspace, f"{name}-{n}", f"{name}-{n}"), final.root)

    threads = [threading.Thread(target=reader)] + [
        threading.Thread(target=writer, args=(w,)) for w in ("a", "b")
    ]
    for thread in threads:
        thread.start()
    for thread in threads[1:]:
        thread.join()
    done.set()
    threads[0].join()
    assert missing == []
    assert final.manifest.read_text() in {"a-149", "b-149"}
    # Nothing left behind: every replaced version and every staging folder is gone.
    assert sorted(p.name for p in final.root.parent.iterdir()) == [final.root.name]
    assert list(workspace.traces_staging(DAY, "x").root.parent.iterdir()) == []


def test_two_attempts_of_one_day_stage_in_different_folders(tmp_path):
    workspace = Workspace(tmp_path)
    assert workspace.traces_staging(DAY, "a").root != workspace.traces_staging(DAY, "b").root

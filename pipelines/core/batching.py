"""Work split into batches: index ranges for mapped Airflow tasks and progress bars, and batches
mapped over worker processes in order, as many as the CPUs this process may use."""

from __future__ import annotations

import math
import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def batch_ranges(n: int, size: int) -> list[tuple[int, int]]:
    """`[(0, size), (size, 2·size), …, (…, n)]`: half-open ranges covering 0..n, each at most `size`
    long."""
    if size < 1:
        raise ValueError(f"batch size must be at least 1, not {size}")
    return [(start, min(start + size, n)) for start in range(0, n, size)]


CGROUP_ROOT = Path("/sys/fs/cgroup")


def available_cpus(cgroup_root: Path = CGROUP_ROOT) -> int:
    """The CPUs this process may keep busy: its affinity set, capped by its cgroup's CPU quota, at
    least 1.

    `os.cpu_count()` is the node's CPUs: a 4-CPU container on a 64-core node would start 64 workers
    and be throttled to 4. The quota is cgroup v2's `cpu.max` ("max 100000": none; "150000 100000":
    1.5 CPUs, rounded up to 2 as the last worker is throttled, not idle), else cgroup v1's
    `cpu.cfs_quota_us` / `cpu.cfs_period_us` (-1: none). `cgroup_root` is where the process's cgroup
    files are mounted (a test points it at a folder).
    """
    cpus = (
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    )
    quota = _cgroup_quota(cgroup_root)
    return max(1, min(cpus, math.ceil(quota)) if quota is not None else cpus)


def _cgroup_quota(root: Path) -> float | None:
    """CPUs the cgroup's quota allows (quota ÷ period), None without a quota or a readable file."""
    try:
        quota, period = (root / "cpu.max").read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        quota = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        period = int((root / "cpu" / "cpu.cfs_period_us").read_text())
        return None if quota <= 0 or period <= 0 else quota / period
    except (OSError, ValueError):
        return None


def map_in_processes(
    function: Callable[[T], R],
    batches: Iterable[T],
    *,
    workers: int,
    initializer: Callable[..., None] | None = None,
    initargs: tuple = (),
) -> Iterator[R]:
    """`function` over `batches` in `workers` fresh processes, results in input order, a few batches
    in flight.

    At most two batches per worker are read ahead, so memory holds a handful of batches whatever
    the input's length. With one worker everything runs here, without a process to start.
    Workers are spawned, not forked: they inherit no open connection or lock of the caller.
    """
    if workers <= 1:
        if initializer:
            initializer(*initargs)
        yield from map(function, batches)
        return
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        workers, mp_context=context, initializer=initializer, initargs=initargs
    ) as pool:
        pending: deque[Future] = deque()
        for batch in batches:
            pending.append(pool.submit(function, batch))
            if len(pending) >= 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()

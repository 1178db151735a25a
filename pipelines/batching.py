"""Work split into batches: index ranges for mapped Airflow tasks and progress bars, and batches
mapped over worker processes in order."""

from __future__ import annotations

import multiprocessing
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def batch_ranges(n: int, size: int) -> list[tuple[int, int]]:
    """`[(0, size), (size, 2·size), …, (…, n)]`: half-open ranges covering 0..n, each at most `size` long."""
    if size < 1:
        raise ValueError(f"batch size must be at least 1, not {size}")
    return [(start, min(start + size, n)) for start in range(0, n, size)]


def map_in_processes(function: Callable[[T], R], batches: Iterable[T], *, workers: int,
                     initializer: Callable[..., None] | None = None, initargs: tuple = ()) -> Iterator[R]:
    """`function` over `batches` in `workers` fresh processes, results in input order, a few batches in flight.

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
    with ProcessPoolExecutor(workers, mp_context=context, initializer=initializer, initargs=initargs) as pool:
        pending: deque[Future] = deque()
        for batch in batches:
            pending.append(pool.submit(function, batch))
            if len(pending) >= 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()

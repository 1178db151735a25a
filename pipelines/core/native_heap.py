"""Keep the C heap of a multi-threaded step from growing past what it holds: glibc's malloc knobs,
set at run time.

Two glibc defaults make a step's RSS grow far beyond its live data when threads allocate large
buffers (torch's activations, pyarrow's and numpy's arrays), as the judge batches run
`BATCHES_IN_FLIGHT` at a time:

- every thread that contends for the heap gets an arena of its own (up to 8 per core), and freed
  memory goes back to the arena it came from, not to the system: four batches keep four heaps of
  high-water marks;
- a freed block larger than the mmap threshold (128 KiB at start) raises the threshold to its size
  (up to 32 MiB), so the next large buffers are carved from the heap instead of mmapped, and the
  heap keeps them.

`MALLOC_ARENA_MAX` would need to be in the environment before the process starts (Airflow's task
runner, the benchmarks' spawned processes); `mallopt` sets the same limits from inside, and needs
nothing of whoever starts the process. Peak RSS of the online eval: docs/reference/benchmarks.md.
"""

from __future__ import annotations

import ctypes
import gc

M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
ARENAS = 2
"""Arenas a process may use: the main one and one that the threads share (the default is 8 per
core)."""
MMAP_THRESHOLD = 1 << 20
"""Blocks from 1 MiB up are mmapped and given back to the system when freed; a fixed threshold is
not raised."""


def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt  # noqa: B018 - not glibc (musl, macOS) when absent
        return libc
    except (OSError, AttributeError):
        return None


def bound_native_heap() -> bool:
    """Limit this process's arenas and fix its mmap threshold (glibc only; elsewhere nothing): call
    it before the threads start. Returns whether the limits were set."""
    libc = _libc()
    if libc is None:
        return False
    return bool(libc.mallopt(M_ARENA_MAX, ARENAS)) and bool(
        libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    )


def return_freed_memory() -> None:
    """Hand the memory of freed objects back to the system: Python's, pyarrow's pool's, and the C
    heap's (glibc keeps freed heap pages for reuse unless asked: `malloc_trim`)."""
    import pyarrow as pa

    gc.collect()
    # What survived a full collection (imported modules, the process's caches: millions of objects
    # once ragas is imported) moves to the permanent generation, so the next collection walks only
    # what is newer: 0.8 s per call became milliseconds, for every batch. A frozen object freed by
    # its reference count is still freed; only one that later joins a reference cycle stays, bounded
    # by what was alive here.
    gc.freeze()
    pa.default_memory_pool().release_unused()
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)

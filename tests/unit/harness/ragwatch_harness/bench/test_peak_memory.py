"""A spawned task's peak memory is its own, not the high-water mark of the process that spawned
it."""

from __future__ import annotations

import multiprocessing

from ragwatch_harness.bench.peak_memory import own_peak_rss_mb


def _report(results) -> None:
    results.put(own_peak_rss_mb())


def test_a_spawned_process_does_not_inherit_its_parents_peak():
    ballast = bytearray(400 * 2**20)
    ballast[::4096] = b"\x01" * len(
        ballast[::4096]
    )  # touch every page: the parent's peak is now > 400 MB
    assert own_peak_rss_mb() > 400
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    child = context.Process(target=_report, args=(results,))
    child.start()
    peak = results.get(timeout=120)
    child.join()
    del ballast
    assert (
        0 < peak < 200
    )  # getrusage's ru_maxrss would say > 400 here (Linux copies it at fork, keeps it at exec)

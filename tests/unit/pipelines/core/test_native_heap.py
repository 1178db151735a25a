"""The C heap's limits and trim (native_heap.py): what keeps the judge batches' threads under their
memory bound."""

from __future__ import annotations

import pyarrow  # noqa: F401 - imported by return_freed_memory: loaded before RSS is read

from pipelines.core.native_heap import bound_native_heap, return_freed_memory


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS")) / 1024


def test_the_limits_are_set_on_glibc():  # the platform ragwatch runs on (Linux, glibc)
    assert bound_native_heap() is True


def test_freed_heap_pages_go_back_to_the_system():
    # 48 MB of 1 KiB blocks (above pymalloc's 512 bytes: straight from malloc), then a block that
    # pins the heap's top, so glibc's own trim of a free top cannot give them back: only malloc_trim
    # can.
    blocks = [bytes(1024) + i.to_bytes(4, "little") for i in range(48_000)]
    pin = bytes(1024) + b"pin"
    held = _rss_mb()
    del blocks
    return_freed_memory()
    assert held - _rss_mb() > 30, "the freed blocks' pages stayed in this process"
    assert pin

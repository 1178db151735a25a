"""PII checks remembered per distinct retrieved context: the texts that repeat across a day's
traces.

A trace's retrieved contexts are chunks of the team's corpus, and they are most of its bytes (85 %
of a 5-10 KB production trace). Over a day's sample the same chunks come back again and again: a
corpus of 10,000 chunks read by 50,000 sampled traces of eight contexts each is every chunk forty
times. Finding PII and checking for residual PII are pure functions of the text, so a chunk is
scanned once per process and its result reused; the pseudonyms that replace what was found are
still keyed per trace. Questions and answers are written once per trace: they never go through here.

A text is remembered by its digest, not kept: keyed by the text itself, the memo held every chunk it
remembered (16,384 chunks of up to 4,096 characters: up to 64 MB per function, two functions in each
anonymizing worker, one in each validating worker); keyed by 16 bytes of BLAKE2b it holds a few MB.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections import OrderedDict, namedtuple
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
CacheInfo = namedtuple("CacheInfo", "hits misses maxsize currsize")
"""What `functools.lru_cache` reports, the same fields."""

REMEMBERED_TEXTS = 16_384
"""Distinct contexts each function keeps per process, least recently used out first."""
REMEMBERED_MAX_CHARS = 4_096
"""Longer texts are checked every time: a chunk of 300 words is about 2,000 characters, and a longer
text is rarely a chunk that repeats."""


def _digest(text: str) -> bytes:
    # 128 bits: two distinct chunks of a day share a digest with odds of 2^-100 and less.
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def per_distinct_context(function: Callable[[str], T]) -> Callable[[str], T]:
    """`function`, its result for a chunk-sized text computed once and reused. `function` must be
    pure and its result immutable (a tuple): every caller of the same text gets the same object."""
    remembered: OrderedDict[bytes, T] = OrderedDict()
    lock = (
        threading.Lock()
    )  # the judge's threads may share a process: the LRU's two steps stay together
    counts = {"hits": 0, "misses": 0}

    @functools.wraps(function)
    def wrapper(text: str) -> T:
        if len(text) > REMEMBERED_MAX_CHARS:
            return function(text)
        key = _digest(text)
        with lock:
            if key in remembered:
                remembered.move_to_end(key)
                counts["hits"] += 1
                return remembered[key]
        result = function(text)
        with lock:
            counts["misses"] += 1
            remembered[key] = result
            if len(remembered) > REMEMBERED_TEXTS:
                remembered.popitem(last=False)
        return result

    def cache_info() -> CacheInfo:
        return CacheInfo(counts["hits"], counts["misses"], REMEMBERED_TEXTS, len(remembered))

    wrapper.cache_info = cache_info  # type: ignore[attr-defined]
    return wrapper

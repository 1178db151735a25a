"""PII checks remembered per distinct retrieved context: the texts that repeat across a day's traces.

A trace's retrieved contexts are chunks of the team's corpus, and they are most of its bytes (85 %
of a 5-10 KB production trace). Over a day's sample the same chunks come back again and again: a
corpus of 10,000 chunks read by 50,000 sampled traces of eight contexts each is every chunk forty
times. Finding PII and checking for residual PII are pure functions of the text, so a chunk is
scanned once per process and its result reused; the pseudonyms that replace what was found are
still keyed per trace. Questions and answers are written once per trace: they never go through here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

REMEMBERED_TEXTS = 16_384
"""Distinct contexts each function keeps per process, least recently used out first."""
REMEMBERED_MAX_CHARS = 4_096
"""Longer texts are checked every time: with the count above, at most 64 MB per function and process.
A chunk of 300 words is about 2,000 characters."""


def per_distinct_context(function: Callable[[str], T]) -> Callable[[str], T]:
    """`function`, its result for a chunk-sized text computed once and reused. `function` must be pure
    and its result immutable (a tuple): every caller of the same text gets the same object."""
    remembered = functools.lru_cache(maxsize=REMEMBERED_TEXTS)(function)

    @functools.wraps(function)
    def wrapper(text: str) -> T:
        return remembered(text) if len(text) <= REMEMBERED_MAX_CHARS else function(text)

    wrapper.cache_info = remembered.cache_info  # type: ignore[attr-defined]
    return wrapper

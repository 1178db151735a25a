"""Deterministic, stratified, hash-based selection of one data interval's traces.

Each trace gets a uniform pseudo-random key from a hash of its id. Every stratum keeps its
`target` smallest keys, where target = round(rate × size), at least `min_per_stratum`, at
most the stratum's size. So the same interval always selects the same traces, a higher
rate selects a superset, small strata are represented, and memory is bounded by the size of
the selection, not of the table. On PostgreSQL the server ranks each stratum's keys
(`selection_key_sql`) and sends only the rows within their stratum's target.
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

import sqlalchemy as sa

from pipelines.core.records import SAMPLER_VERSION


def selection_key(trace_id: str) -> int:
    digest = hashlib.sha256(f"{SAMPLER_VERSION}\x00{trace_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def selection_key_sql(trace_id: sa.ColumnElement) -> sa.ColumnElement:
    """`selection_key` in PostgreSQL: the same SHA-256's first 8 bytes, which compare as bytes in
    the order of their unsigned big-endian value."""
    message = sa.literal(f"{SAMPLER_VERSION}\x00".encode(), sa.LargeBinary).op("||")(
        sa.func.convert_to(trace_id, "UTF8")
    )
    return sa.func.substr(sa.func.sha256(message), 1, 8)


def stratum_target(size: int, rate: float, min_per_stratum: int) -> int:
    proportional = int(Decimal(repr(rate * size)).quantize(Decimal(1), rounding=ROUND_HALF_UP))
    return min(size, max(min_per_stratum, proportional))


@dataclass(frozen=True)
class StratumSelection:
    stratum: tuple
    population: int
    selected: int


@dataclass(frozen=True)
class Selection:
    trace_ids: list[str]
    """Sorted, so every later step is order-stable."""
    strata: list[StratumSelection]

    @property
    def population(self) -> int:
        return sum(s.population for s in self.strata)


def select_traces(
    population_by_stratum: dict[tuple, int],
    keyed_rows: Iterable[Sequence],
    *,
    rate: float,
    min_per_stratum: int,
) -> Selection:
    """Pick trace ids from `(trace_id, *stratum values)` rows, given each stratum's size."""
    targets = {
        s: stratum_target(n, rate, min_per_stratum) for s, n in population_by_stratum.items()
    }
    # Max-heaps (negated keys) holding each stratum's `target` smallest keys seen so far.
    kept: dict[tuple, list[tuple[int, str]]] = {s: [] for s in targets}
    for trace_id, *values in keyed_rows:
        stratum = tuple(values)
        heap, target = kept.get(stratum), targets.get(stratum, 0)
        if heap is None or target == 0:
            continue  # a row inserted after counting; the next run will see it counted
        item = (-selection_key(trace_id), trace_id)
        if len(heap) < target:
            heapq.heappush(heap, item)
        elif item > heap[0]:
            heapq.heapreplace(heap, item)
    strata = [
        StratumSelection(stratum=s, population=population_by_stratum[s], selected=len(kept[s]))
        for s in sorted(kept, key=_sortable)
    ]
    ids = sorted(trace_id for heap in kept.values() for _, trace_id in heap)
    return Selection(trace_ids=ids, strata=strata)


def _sortable(stratum: tuple) -> tuple:
    return tuple((v is None, str(v)) for v in stratum)

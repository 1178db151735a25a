"""Which of a day's sampled traces the online eval judges: a budget, stratified, stable under rerun
and growth.

The day's sample (`golden/traces/dt=…`) can hold tens of thousands of traces; the online eval judges
at most `max_traces` of them. The budget is divided among the app/language strata by
`allocation.allocate` (a floor of `min_per_stratum` each, the rest in proportion to the stratum's
size), and each stratum keeps the traces with the smallest `selection_key`: the sampling's own hash
family, so

- a rerun of the same day judges the same traces (and hits the LLM cache),
- a larger budget judges a superset of a smaller one (allocate never lowers a stratum's count, and
  the smallest keys of a stratum are a prefix of its larger smallest-keys set),
- which traces are judged does not depend on the order the partition stores them in.

Noise sensitivity costs about twice the clean scores, so it runs on a smaller share: within each
stratum, the `ceil(noise_share × judged)` judged traces with the smallest keys — at least one where
the stratum has any judged trace and the share is above 0, so every stratum has a ΔF row to read,
and again a prefix, so superset-stable too.

A budget may also be given as a target half-width (`HalfWidthTarget`): each stratum then asks for
the traces its faithfulness interval needs to be about ±h wide, n = ⌈(1.96 · sd / h)²⌉, with sd the
stratum's spread in the last runs (the pooled spread for a stratum they did not have), at least the
floor and at most what the day has; `max_traces` still caps the total, shared in proportion to what
the strata asked for.

Memory is bounded by the budget, not the day: the selection reads only the trace id, app and
language columns, in record batches, and keeps per stratum a heap of its target size; the judged
rows' other columns are then read batch by batch, filtered on the selected ids.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel

from pipelines.evaluation.allocation import allocate
from pipelines.stores.partitions import iter_part_batches
from pipelines.traces.select import selection_key

SELECTION_COLUMNS = ["trace_id", "app", "language"]
"""All the selection reads of the day's partition."""
JUDGED_COLUMNS = ["trace_id", "app", "language", "question", "answer", "contexts", "tool_calls"]
"""What the judge batches need of a selected trace."""
READ_ROWS = 8_192
"""Rows per record batch of the selection's three short columns."""
JUDGED_READ_ROWS = 1_024
"""Rows per record batch of the judged columns (their text): a few MB, whatever the day's size."""


Z95 = 1.959964
"""The normal quantile of a two-sided 95 % interval."""


class StratumBudget(BaseModel):
    stratum: str
    """`app/language`."""
    day_traces: int
    """Traces of the day's sample in the stratum."""
    judged: int
    noise: int
    """Judged traces that also get noise sensitivity."""
    wanted: int | None = None
    """With a target half-width: the traces the stratum asked for (before the day's size and the
    budget)."""


class BudgetCounts(BaseModel):
    """How the day's budget was spent: what run.json, the results DB and the report say."""

    max_traces: int
    min_per_stratum: int
    noise_share: float
    day_traces: int
    judged: int
    noise: int
    strata: list[StratumBudget]
    target_half_width: float | None = None
    """The faithfulness half-width the strata were sized for; None: the budget alone."""


@dataclass(frozen=True)
class HalfWidthTarget:
    """Judged traces per stratum for faithfulness' 95 % interval to be about ±`half_width`, from
    past spread."""

    half_width: float
    spread: dict[str, float]
    """Stratum -> the standard deviation of its faithfulness scores in the last runs."""
    pooled: float
    """The spread over every stratum: for a stratum the last runs did not have."""

    def wanted(self, stratum: str, floor: int) -> int:
        sd = self.spread.get(stratum, self.pooled)
        return max(floor, math.ceil((Z95 * sd / self.half_width) ** 2))


@dataclass(frozen=True)
class OnlineSelection:
    counts: BudgetCounts
    judged: frozenset[str]
    noise: frozenset[str]
    """A subset of `judged`."""


def stratum_of(app: str, language: str) -> str:
    return f"{app}/{language}"


def noise_count(judged: int, share: float) -> int:
    """Noise traces of a stratum with `judged` judged traces: ceil(share × judged), exact in decimal
    (0.1 × 30 is 3, not 4), so at least one wherever share > 0 and judged > 0."""
    return min(judged, math.ceil(Decimal(repr(share)) * judged))


def select_budget(
    parts: Sequence[Path],
    *,
    max_traces: int,
    min_per_stratum: int,
    noise_share: float,
    target: HalfWidthTarget | None = None,
    read_rows: int = READ_ROWS,
) -> OnlineSelection:
    """The traces of one day's partition (its part files, `PartitionPaths.parts`) to judge, and
    those to add noise to; with a `target`, each stratum sized for it, `max_traces` capping the
    total."""
    population: Counter[str] = Counter()
    for batch in iter_part_batches(parts, batch_size=read_rows, columns=SELECTION_COLUMNS[1:]):
        population.update(
            map(stratum_of, batch.column("app").to_pylist(), batch.column("language").to_pylist())
        )
    wanted = {s: target.wanted(s, min_per_stratum) for s in population} if target else {}
    # allocate never gives a stratum more than it is offered: the day's traces, or as many as the
    # target asks.
    offered = {s: min(n, wanted.get(s, n)) for s, n in population.items()}
    targets = allocate(offered, max_traces, floor=min_per_stratum)
    # Max-heaps (negated keys) of each stratum's `targets[stratum]` smallest (key, trace id) seen so
    # far.
    kept: dict[str, list[tuple[int, str]]] = {s: [] for s in targets}
    for batch in iter_part_batches(parts, batch_size=read_rows, columns=SELECTION_COLUMNS):
        columns = (batch.column(name).to_pylist() for name in SELECTION_COLUMNS)
        for trace_id, app, language in zip(*columns):
            stratum = stratum_of(app, language)
            heap, size = kept[stratum], targets[stratum]
            if size == 0:
                continue
            item = (-selection_key(trace_id), trace_id)
            if len(heap) < size:
                heapq.heappush(heap, item)
            elif item > heap[0]:
                heapq.heapreplace(heap, item)
    judged: set[str] = set()
    noise: set[str] = set()
    strata = []
    for stratum in sorted(kept):
        ranked = [
            trace_id for _, trace_id in sorted(kept[stratum], reverse=True)
        ]  # smallest key first
        share = noise_count(len(ranked), noise_share)
        judged.update(ranked)
        noise.update(ranked[:share])
        strata.append(
            StratumBudget(
                stratum=stratum,
                day_traces=population[stratum],
                judged=len(ranked),
                noise=share,
                wanted=wanted.get(stratum),
            )
        )
    counts = BudgetCounts(
        max_traces=max_traces,
        min_per_stratum=min_per_stratum,
        noise_share=noise_share,
        day_traces=sum(population.values()),
        judged=len(judged),
        noise=len(noise),
        strata=strata,
        target_half_width=target.half_width if target else None,
    )
    return OnlineSelection(counts=counts, judged=frozenset(judged), noise=frozenset(noise))


def read_judged(
    parts: Sequence[Path],
    trace_ids: frozenset[str],
    *,
    columns: Sequence[str] = JUDGED_COLUMNS,
    read_rows: int = JUDGED_READ_ROWS,
) -> Iterator[dict[str, Any]]:
    """The selected traces' `columns` in the partition's order (a rerun reads them in the same
    order), read batch by batch and filtered on the ids before any row becomes a Python object."""
    ids = pa.array(sorted(trace_ids), type=pa.string())
    for batch in iter_part_batches(parts, batch_size=read_rows, columns=columns):
        chosen = batch.filter(pc.is_in(batch.column("trace_id"), value_set=ids))
        yield from chosen.to_pylist()

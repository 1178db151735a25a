"""What model requests cost, per stage and metric: requests sent, cache hits, tokens, LLM-seconds.

The LLM client counts where it happens (llm.py): a request each time one is sent to the server
(every attempt, retries and repair rounds included, as the server counts them), a cache hit each
time the cache answers instead, tokens from the reply's `usage` (what the server says it processed;
the offline backend and a server that sends no `usage` report 0), and LLM-seconds as the wall time
from sending a request to its reply (waiting for a free slot of the endpoint's limit excluded).

Who asked is said by the calling code with `scope(stage=..., metric=...)`: a context variable, so
each asyncio task (and `asyncio.to_thread`) carries the scope it was created in, and concurrent
items never mix their counts. `stage` is a step of a run (STAGES); `metric` what the request
computes: a judge metric ("faithfulness"; "faithfulness+context_recall" for a request that serves
several), "answer" for a generated answer, "tool_call" for a tool choice; unset, the prompt's name.
The rows (`UsageRow`) are what a run records per batch and sums in finalize
(`pipelines.evaluation.runs.cost`), and what a later estimate of a run's cost can be computed from
(tokens per request per stage and metric).
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

from pydantic import BaseModel

T = TypeVar("T")
STAGES = {
    "target": "the system under test answering the golden items (the reference RAG's generator, tool choices)",
    "judge": "the judge metrics of the items' own answers (and answer correctness)",
    "judge_retest": "the judge metrics of a share of the items judged again, cache bypassed (judge noise)",
    "noise_clean": "noise ΔF's clean arm: the answer from the clean contexts and its faithfulness",
    "noise_noisy": "noise ΔF's noisy arm: the answer from the noisy contexts and its faithfulness",
    "noise_control": "noise ΔF's control arm: the clean contexts answered again and its faithfulness",
    "golden_generate": "the golden build's question and answer generation",
    "golden_filter": "the golden build's filters (closed-book answer, grounding judge)",
}
UNSCOPED = "other"
"""The stage of a request sent outside any `scope` (a notebook, a benchmark calling the client
directly)."""
COUNTS = ("requests", "cache_hits", "prompt_tokens", "completion_tokens", "llm_seconds", "failures")

_STAGE: ContextVar[str | None] = ContextVar("ragwatch_llm_stage", default=None)
_METRIC: ContextVar[str | None] = ContextVar("ragwatch_llm_metric", default=None)


@contextmanager
def scope(*, stage: str | None = None, metric: str | None = None) -> Iterator[None]:
    """Requests sent in this block (and in the tasks it creates) count under `stage` and `metric`;
    None keeps the enclosing one."""
    if stage is not None and stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; choose from {sorted(STAGES)}")
    tokens = [
        (var, var.set(value))
        for var, value in ((_STAGE, stage), (_METRIC, metric))
        if value is not None
    ]
    try:
        yield
    finally:
        for var, token in reversed(tokens):
            var.reset(token)


async def scoped(
    awaitable: Awaitable[T], *, stage: str | None = None, metric: str | None = None
) -> T:
    """`await awaitable` under `scope(...)`: for a coroutine handed to `asyncio.gather`."""
    with scope(stage=stage, metric=metric):
        return await awaitable


@contextmanager
def default_metric(metric: str) -> Iterator[None]:
    """`scope(metric=metric)` unless an enclosing scope named the metric already (the LLM client
    names the prompt)."""
    with scope(metric=None if _METRIC.get() else metric):
        yield


def current() -> tuple[str, str]:
    """(stage, metric) of the running code."""
    return _STAGE.get() or UNSCOPED, _METRIC.get() or UNSCOPED


class RequestCounts(BaseModel):
    """The model requests of some work and the tokens they cost: a usage row's, a week's."""

    requests: int = 0
    """HTTP requests sent (every attempt); cache hits are not requests."""
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class UsageRow(RequestCounts):
    """One stage × metric × model of a run (or a batch of it)."""

    stage: str
    metric: str
    role: str
    """"judge" or "generator": whose endpoint served it."""
    model: str
    llm_seconds: float = 0.0
    """Summed wall time of the requests, from sending to the reply (concurrent requests overlap)."""
    failures: int = 0
    """Calls that ended without a value (after their retries), calls the token budget refused
    included."""

    @property
    def key(self) -> tuple[str, str, str, str]:
        return self.stage, self.metric, self.role, self.model


class UsageLedger:
    """Counts per (stage, metric) of one LLM instance; safe to update from several threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str], dict[str, float]] = {}

    def add(self, where: tuple[str, str], **amounts: float) -> None:
        with self._lock:
            counts = self._counts.setdefault(where, dict.fromkeys(COUNTS, 0))
            for name, amount in amounts.items():
                counts[name] += amount

    def rows(self, role: str, model: str) -> list[UsageRow]:
        with self._lock:
            return [
                UsageRow(stage=stage, metric=metric, role=role, model=model, **_rounded(counts))
                for (stage, metric), counts in sorted(self._counts.items())
            ]


def summed(rows: Iterable[UsageRow]) -> list[UsageRow]:
    """Rows with the same stage, metric, role and model added up, in a stable order."""
    total: dict[tuple[str, str, str, str], UsageRow] = {}
    for row in rows:
        if row.key in total:
            kept = total[row.key]
            total[row.key] = kept.model_copy(
                update=_rounded({c: getattr(kept, c) + getattr(row, c) for c in COUNTS})
            )
        else:
            total[row.key] = row
    return [total[key] for key in sorted(total)]


def _rounded(counts: dict[str, float]) -> dict[str, float]:
    return {
        name: round(value, 3) if name == "llm_seconds" else int(value)
        for name, value in counts.items()
    }

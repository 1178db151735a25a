"""Plan a golden build: stratified seed chunks and the generation jobs made from them.

Seeds are chosen by a hash of each chunk's *position* (document, section, ordinal), not of its
content: after a corpus refresh the same positions are chosen again, so unchanged chunks
regenerate identical items (free, from the cache) and changed ones yield replacements.
A job carries everything its model call needs, so generation never touches the index.

Tool triples are planned in the number the gate needs (`tool_jobs`): enough that the test split can
hold the gate's min pairs of them after the filters' rejects and the dev share. A corpus with fewer
usable chunks than that lends each chunk to a second and third tool (`tool_seeds`).
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel

from pipelines.golden.params import GoldenParams
from pipelines.golden.prompts import SeedChunk

log = logging.getLogger(__name__)
JobKind = Literal["chunk_questions", "multi_hop", "adversarial", "tool", "trace"]
TOOLS_CYCLE = ("vector_search", "sql_query", "web_search")
TOOL_REJECT_ALLOWANCE = 0.2
"""Share of planned tool triples the plan allows the filters to reject (ambiguous,
near-duplicate)."""


class Job(BaseModel):
    job_id: str
    kind: JobKind
    source_ref: str
    """Position key(s) of the seed chunk(s), or the trace id."""
    payload: dict[str, Any]


def position_key(chunk_id: str) -> str:
    """`doc#section/3-1a2b3c4d` -> `doc#section/3`: where a chunk is, whatever it says now."""
    return chunk_id.rsplit("-", 1)[0] if "-" in chunk_id.rsplit("/", 1)[-1] else chunk_id


def _rank(key: str, salt: str) -> str:
    return hashlib.sha256(f"{salt}\x00{key}".encode()).hexdigest()


def stratified_seeds(chunks: Sequence[Any], n: int, salt: str = "seeds") -> list[Any]:
    """Pick `n` chunks spread over strata (type, language, document), then sections.

    Round-robin over strata ordered by hash, so every document gets a seed before any gets two,
    and within a document sections are visited before a section is revisited.
    """
    by_stratum: dict[tuple, list] = defaultdict(list)
    for chunk in chunks:
        if len(chunk.text.split()) >= 25:  # a heading or a stub cannot carry a question
            by_stratum[(chunk.type, chunk.language, chunk.document)].append(chunk)
    queues = []
    for stratum in sorted(by_stratum, key=lambda s: _rank(repr(s), salt)):
        by_section: dict[str, list] = defaultdict(list)
        for chunk in sorted(
            by_stratum[stratum], key=lambda c: _rank(position_key(c.chunk_id), salt)
        ):
            by_section[chunk.section].append(chunk)
        sections = sorted(by_section.values(), key=lambda cs: _rank(cs[0].section, salt))
        queues.append([c for round_ in _interleave(sections) for c in round_])
    picked = []
    for round_ in _interleave(queues):
        for chunk in round_:
            if len(picked) == n:
                return picked
            picked.append(chunk)
    return picked


def _interleave(lists: Iterable[list]) -> Iterable[list]:
    lists = [list(items) for items in lists]
    for i in range(max((len(items) for items in lists), default=0)):
        yield [items[i] for items in lists if i < len(items)]


def seed_chunk(chunk: Any) -> SeedChunk:
    """A corpus chunk's fields that a generation prompt reads, each read from its attribute."""
    return SeedChunk.model_validate(chunk, from_attributes=True)


def _job(kind: JobKind, source_ref: str, payload: dict) -> Job:
    return Job(
        job_id=_rank(f"{kind}|{source_ref}", "job")[:16],
        kind=kind,
        source_ref=source_ref,
        payload=payload,
    )


def tool_jobs(params: GoldenParams, test_floor: int) -> int:
    """Tool triples to plan: `params.tool_triples`, raised so that `test_floor` of them can reach
    the test split after `TOOL_REJECT_ALLOWANCE` rejects and the dev share; 0 stays 0 (a service
    without an agent)."""
    if not params.tool_triples or params.dev_fraction >= 1:
        return params.tool_triples
    needed = math.ceil(
        round(test_floor / (1 - params.dev_fraction) / (1 - TOOL_REJECT_ALLOWANCE), 9)
    )
    return max(params.tool_triples, needed)


def plan_jobs(
    chunks: Sequence[Any],
    params: GoldenParams,
    *,
    related: callable,
    traces: Sequence[dict[str, Any]] = (),
    trace_contexts: callable = None,
    tool_test_floor: int = 0,
) -> list[Job]:
    """All generation jobs of one build.

    `related(chunk) -> chunk | None` finds a partner chunk through the index for multi-hop
    questions; `trace_contexts(question) -> list[chunk]` retrieves contexts for trace questions;
    `tool_test_floor`: tool triples the test split should hold (`tool_jobs`).
    """
    ordered = sorted(chunks, key=lambda c: (c.document, c.section, getattr(c, "ordinal", 0)))
    jobs = [
        _job(
            "chunk_questions",
            position_key(c.chunk_id),
            {"chunk": seed_chunk(c).model_dump(), "n": params.questions_per_seed},
        )
        for c in stratified_seeds(ordered, params.seeds, "single")
    ]

    next_in_section = {
        a.chunk_id: b
        for a, b in zip(ordered, ordered[1:])
        if (a.document, a.section) == (b.document, b.section)
    }
    for i, chunk in enumerate(stratified_seeds(ordered, params.multi_hop, "multi")):
        boundary = i % 2 == 1 and chunk.chunk_id in next_in_section
        partner = next_in_section[chunk.chunk_id] if boundary else related(chunk)
        if partner is None:
            continue
        pair = [chunk, partner]
        jobs.append(
            _job(
                "multi_hop",
                "+".join(position_key(c.chunk_id) for c in pair),
                {
                    "chunks": [seed_chunk(c).model_dump() for c in pair],
                    "variant": "boundary" if boundary else "bridge",
                },
            )
        )

    for i, chunk in enumerate(stratified_seeds(ordered, params.adversarial, "adversarial")):
        kind = ("false_premise", "not_in_corpus")[i % 2]
        jobs.append(
            _job(
                "adversarial",
                position_key(chunk.chunk_id),
                {"chunk": seed_chunk(chunk).model_dump(), "kind": kind},
            )
        )

    wanted = tool_jobs(params, tool_test_floor)
    if wanted > params.tool_triples:
        log.info(
            "planning %d tool triples instead of %d, so that the test split can hold %d after rejects and "
            "the dev share (%.0f %%)",
            wanted,
            params.tool_triples,
            tool_test_floor,
            100 * params.dev_fraction,
        )
    for chunk, tool in tool_seeds(ordered, wanted):
        jobs.append(
            _job(
                "tool",
                f"{position_key(chunk.chunk_id)}@{tool}",
                {"chunk": seed_chunk(chunk).model_dump(), "tool": tool},
            )
        )

    for trace in traces:
        contexts = trace_contexts(trace["question"]) if trace_contexts else []
        jobs.append(
            _job(
                "trace",
                trace["trace_id"],
                {
                    "question": trace["question"],
                    "language": trace["language"],
                    "contexts": [{"chunk_id": c.chunk_id, "text": c.text} for c in contexts],
                },
            )
        )
    return jobs


def tool_seeds(ordered: Sequence[Any], n: int) -> list[tuple[Any, str]]:
    """`n` (chunk, tool) pairs: stratified seed chunks with the tools in turn; when the corpus has
    fewer usable chunks than `n`, the same chunks again with the next tool each round (every pair
    distinct), at most three rounds. The first round is what a corpus with enough chunks gets, so
    its job ids never change."""
    seeds = stratified_seeds(ordered, n, "tool")
    pairs = [
        (chunk, TOOLS_CYCLE[(i + round_) % len(TOOLS_CYCLE)])
        for round_ in range(len(TOOLS_CYCLE))
        for i, chunk in enumerate(seeds)
    ][:n]
    if len(pairs) < n:
        log.warning(
            "the corpus has %d chunks usable as tool seeds: %d tool triples planned, not %d",
            len(seeds),
            len(pairs),
            n,
        )
    return pairs


TRACE_SALT = b"trace\x00"
"""`_rank(trace_id, "trace")` is sha256 of this prefix and the id: trace questions are ranked by
it."""
PRUNE_FACTOR = 2
"""A stratum's kept candidates are cut back to `n` when they reach `PRUNE_FACTOR × n` (amortized
sorting)."""


class TraceQuestionSample:
    """The trace questions a plan takes, picked while the days' rows stream by.

    The picks are stratified by (app, language), hash-ordered within a stratum (`_rank(trace_id,
    "trace")`, ties in reading order), questions of 4–60 words only, taken in rounds across the
    strata (the first of each stratum, then the second…) until `n`. A round takes at most one row
    per stratum, so no stratum gives more than its `n` best rows: only those are kept, and memory
    grows with strata × n, not with the days' rows (14 days of 1 M traces read in batches, ~100
    picked).
    """

    def __init__(self, n: int):
        self.n = n
        self._seen = 0
        self._kept: dict[tuple[str, str], list[tuple[bytes, int, str, str]]] = {}
        """stratum -> candidates (digest, reading order, trace id, question), at most PRUNE_FACTOR ×
        n."""
        self._limit: dict[tuple[str, str], bytes] = {}
        """stratum -> the n-th best digest once the stratum has been cut back: rows ranked after it
        never enter."""

    def add(
        self,
        trace_ids: Sequence[str],
        apps: Sequence[str],
        languages: Sequence[str],
        questions: Sequence[str],
    ) -> None:
        """One batch of rows, as columns, in reading order."""
        if self.n == 0:
            return
        base = hashlib.sha256(TRACE_SALT)
        kept, limit, n = self._kept, self._limit, self.n
        for i, (trace_id, app, language) in enumerate(zip(trace_ids, apps, languages)):
            digest = base.copy()
            digest.update(trace_id.encode())
            rank = digest.digest()  # bytes order = hex order: the same ranking as _rank()
            stratum = (app, language)
            if stratum in limit and rank >= limit[stratum]:
                continue  # an equal digest read later ranks after the kept one too
            question = questions[i]
            if not 4 <= len(question.split()) <= 60:
                continue
            candidates = kept.setdefault(stratum, [])
            candidates.append((rank, self._seen + i, trace_id, question))
            if len(candidates) >= PRUNE_FACTOR * n:
                candidates.sort()
                del candidates[n:]
                limit[stratum] = candidates[-1][0]
        self._seen += len(trace_ids)

    def picked(self) -> list[dict[str, Any]]:
        queues = [
            [
                {
                    "trace_id": trace_id,
                    "question": question,
                    "app": stratum[0],
                    "language": stratum[1],
                }
                for _, _, trace_id, question in sorted(self._kept[stratum])[: self.n]
            ]
            for stratum in sorted(self._kept)
        ]
        picked = []
        for round_ in _interleave(queues):
            picked.extend(round_[: self.n - len(picked)])
            if len(picked) >= self.n:
                break
        return picked


def pick_trace_questions(rows: Iterable[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """Stratified by (app, language), hash-ordered: real phrasing from production, already
    anonymized.

    Rows may stream (a generator): only the candidates `TraceQuestionSample` keeps stay in memory.
    """
    sample = TraceQuestionSample(n)
    for row in rows:
        sample.add([row["trace_id"]], [row["app"]], [row["language"]], [row["question"]])
    return sample.picked()

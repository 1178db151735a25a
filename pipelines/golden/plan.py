"""Plan a golden build: stratified seed chunks and the generation jobs made from them.

Seeds are chosen by a hash of each chunk's *position* (document, section, ordinal), not of its
content: after a corpus refresh the same positions are chosen again, so unchanged chunks
regenerate identical items (free, from the cache) and changed ones yield replacements.
A job carries everything its model call needs, so generation never touches the index.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel

from pipelines.golden.params import GoldenParams
from pipelines.golden.prompts import SeedChunk

JobKind = Literal["chunk_questions", "multi_hop", "adversarial", "tool", "trace"]
TOOLS_CYCLE = ("vector_search", "sql_query", "web_search")


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
        for chunk in sorted(by_stratum[stratum], key=lambda c: _rank(position_key(c.chunk_id), salt)):
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
    return SeedChunk(chunk_id=chunk.chunk_id, document=chunk.document, section=chunk.section,
                     language=chunk.language, text=chunk.text)  # fmt: skip


def _job(kind: JobKind, source_ref: str, payload: dict) -> Job:
    return Job(job_id=_rank(f"{kind}|{source_ref}", "job")[:16], kind=kind, source_ref=source_ref, payload=payload)


def plan_jobs(
    chunks: Sequence[Any],
    params: GoldenParams,
    *,
    related: callable,
    traces: Sequence[dict[str, Any]] = (),
    trace_contexts: callable = None,
) -> list[Job]:
    """All generation jobs of one build.

    `related(chunk) -> chunk | None` finds a partner chunk through the index for multi-hop
    questions; `trace_contexts(question) -> list[chunk]` retrieves contexts for trace questions.
    """
    ordered = sorted(chunks, key=lambda c: (c.document, c.section, getattr(c, "ordinal", 0)))
    jobs = [
        _job("chunk_questions", position_key(c.chunk_id),
             {"chunk": seed_chunk(c).model_dump(), "n": params.questions_per_seed})
        for c in stratified_seeds(ordered, params.seeds, "single")
    ]  # fmt: skip

    next_in_section = {a.chunk_id: b for a, b in zip(ordered, ordered[1:]) if (a.document, a.section) == (b.document, b.section)}
    for i, chunk in enumerate(stratified_seeds(ordered, params.multi_hop, "multi")):
        boundary = i % 2 == 1 and chunk.chunk_id in next_in_section
        partner = next_in_section[chunk.chunk_id] if boundary else related(chunk)
        if partner is None:
            continue
        pair = [chunk, partner]
        jobs.append(_job("multi_hop", "+".join(position_key(c.chunk_id) for c in pair),
                         {"chunks": [seed_chunk(c).model_dump() for c in pair], "variant": "boundary" if boundary else "bridge"}))  # fmt: skip

    for i, chunk in enumerate(stratified_seeds(ordered, params.adversarial, "adversarial")):
        kind = ("false_premise", "not_in_corpus")[i % 2]
        jobs.append(_job("adversarial", position_key(chunk.chunk_id), {"chunk": seed_chunk(chunk).model_dump(), "kind": kind}))

    for i, chunk in enumerate(stratified_seeds(ordered, params.tool_triples, "tool")):
        tool = TOOLS_CYCLE[i % len(TOOLS_CYCLE)]
        jobs.append(_job("tool", f"{position_key(chunk.chunk_id)}@{tool}", {"chunk": seed_chunk(chunk).model_dump(), "tool": tool}))

    for trace in traces:
        contexts = trace_contexts(trace["question"]) if trace_contexts else []
        jobs.append(_job("trace", trace["trace_id"], {
            "question": trace["question"], "language": trace["language"],
            "contexts": [{"chunk_id": c.chunk_id, "text": c.text} for c in contexts],
        }))  # fmt: skip
    return jobs


def pick_trace_questions(rows: Sequence[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """Stratified by (app, language), hash-ordered: real phrasing from production, already anonymized."""
    by_stratum: dict[tuple, list] = defaultdict(list)
    for row in rows:
        if 4 <= len(row["question"].split()) <= 60:
            by_stratum[(row["app"], row["language"])].append(row)
    queues = [sorted(by_stratum[s], key=lambda r: _rank(r["trace_id"], "trace")) for s in sorted(by_stratum)]
    picked = []
    for round_ in _interleave(queues):
        picked.extend(round_[: n - len(picked)])
        if len(picked) >= n:
            break
    return picked

"""Run generation jobs through the LLM layer and turn the answers into candidate golden items."""

from __future__ import annotations

import hashlib
import json
import logging
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import ValidationError

from pipelines.core.records import GoldenItem
from pipelines.golden import prompts
from pipelines.golden.plan import Job
from pipelines.models.llm import LLM

log = logging.getLogger(__name__)


def item_id(qtype: str, source_ref: str, question: str) -> str:
    return hashlib.sha256(f"{qtype}\x00{source_ref}\x00{question.strip()}".encode()).hexdigest()[
        :16
    ]


def _item(
    job: Job,
    *,
    qtype: str,
    question: str,
    answer: str,
    variant: str,
    language: str,
    gold: list[str],
    contexts: list[str],
    meta: dict[str, Any],
    **extra,
) -> GoldenItem:
    return GoldenItem(
        item_id=item_id(qtype, job.source_ref, question),
        question=question,
        reference_answer=answer,
        gold_chunk_ids=gold,
        reference_contexts=contexts,
        qtype=qtype,
        variant=variant,
        language=language,
        source="trace" if job.kind == "trace" else "corpus",
        source_ref=job.source_ref,
        **meta,
        **extra,
    )


def _qa_item(
    job: Job,
    qa: prompts.QA,
    meta: dict,
    *,
    qtype: str,
    language: str,
    gold: list[str],
    contexts: list[str],
) -> GoldenItem:
    """The item of a generated question: the reply's fields are its question, reference answer and
    variant."""
    return _item(
        job,
        qtype=qtype,
        language=language,
        gold=gold,
        contexts=contexts,
        meta=meta,
        **qa.model_dump(),
    )


def _chunk_questions(job: Job, out: prompts.QAList, meta: dict) -> list[GoldenItem]:
    chunk = job.payload["chunk"]
    gold, contexts = [chunk["chunk_id"]], [chunk["text"]]
    return [
        _qa_item(
            job,
            qa,
            meta,
            qtype="single_hop",
            language=chunk["language"],
            gold=gold,
            contexts=contexts,
        )
        for qa in out.items
    ]


def _multi_hop(job: Job, out: prompts.QA, meta: dict) -> list[GoldenItem]:
    chunks = job.payload["chunks"]
    gold, contexts = [c["chunk_id"] for c in chunks], [c["text"] for c in chunks]
    return [
        _qa_item(
            job,
            out,
            meta,
            qtype="multi_hop",
            language=chunks[0]["language"],
            gold=gold,
            contexts=contexts,
        )
    ]


def _adversarial(job: Job, out: prompts.QA, meta: dict) -> list[GoldenItem]:
    language = job.payload["chunk"]["language"]
    return [_qa_item(job, out, meta, qtype="adversarial", language=language, gold=[], contexts=[])]


def _tool(job: Job, out: prompts.ToolTriple, meta: dict) -> list[GoldenItem]:
    call = (
        f"{out.expected_tool}({json.dumps(out.expected_args, ensure_ascii=False, sort_keys=True)})"
    )
    return [
        _item(
            job,
            qtype="tool",
            question=out.question,
            answer=f"Call {call}",
            variant=out.expected_tool,
            language=job.payload["chunk"]["language"],
            gold=[],
            contexts=[],
            meta=meta,
            expected_tool=out.expected_tool,
            expected_args=out.expected_args,
        )
    ]


def _trace(job: Job, out: prompts.GroundedAnswer, meta: dict) -> list[GoldenItem]:
    by_id = {c["chunk_id"]: c["text"] for c in job.payload["contexts"]}
    gold = [cid for cid in out.supporting_chunk_ids if cid in by_id]
    answerable = bool(gold)
    return [
        _item(
            job,
            qtype="single_hop" if answerable else "adversarial",
            variant="production" if answerable else "production_unanswerable",
            question=job.payload["question"],
            answer=out.answer,
            language=job.payload["language"],
            gold=gold,
            contexts=[by_id[c] for c in gold],
            meta=meta,
        )
    ]


HANDLERS: dict[str, tuple[type, Callable[[Job], Any], Callable]] = {
    "chunk_questions": (
        prompts.ChunkQuestions,
        lambda j: prompts.ChunkQuestionsInput(**j.payload),
        _chunk_questions,
    ),
    "multi_hop": (
        prompts.MultiHopQuestion,
        lambda j: prompts.MultiHopInput(**j.payload),
        _multi_hop,
    ),
    "adversarial": (
        prompts.AdversarialQuestion,
        lambda j: prompts.AdversarialInput(**j.payload),
        _adversarial,
    ),
    "tool": (prompts.ToolQuestion, lambda j: prompts.ToolTripleInput(**j.payload), _tool),
    "trace": (prompts.AnswerFromContexts, lambda j: prompts.AnswerInput(**j.payload), _trace),
}


def generate_items(
    llm: LLM,
    jobs: Sequence[Job],
    *,
    corpus_version: str,
    created_at: str,
    progress: Callable[[int], None] | None = None,
) -> tuple[list[GoldenItem], list[dict[str, str]]]:
    """Candidate items, plus one failure record per job the model could not do (never dropped
    silently)."""
    meta = {
        "generator_model": llm.model,
        "corpus_version": corpus_version,
        "created_at": created_at,
    }
    by_kind: dict[str, list[Job]] = defaultdict(list)
    for job in jobs:
        by_kind[job.kind].append(job)
    items, failures, done = [], [], 0
    for kind in sorted(by_kind):
        prompt_class, to_input, to_items = HANDLERS[kind]
        batch = by_kind[kind]
        results = llm.run_many_sync(prompt_class(), [to_input(j) for j in batch])
        for job, result in zip(batch, results):
            error = result.error
            if result.ok:
                try:
                    items.extend(to_items(job, result.value, meta))
                    continue
                except ValidationError as exc:
                    # A real model's reply can fit the task's schema and still break the item
                    # contract (the schema allows an empty question): that job fails with the
                    # reason, the batch goes on.
                    problem = exc.errors(include_url=False)[0]
                    error = (
                        f"unusable reply: {'.'.join(map(str, problem['loc']))}: {problem['msg']}"
                    )
            failures.append(
                {"job_id": job.job_id, "kind": kind, "source_ref": job.source_ref, "error": error}
            )
        done += len(batch)
        if progress:
            progress(done)
        log.info(
            "generated %s: %d jobs, %d failed so far; %s",
            kind,
            len(batch),
            len(failures),
            llm.counters.summary(),
        )
    return items, failures

"""Reject candidate items that would make the golden set lie, keeping each rejection's reason.

Order matters and is reported as a funnel: cheap rules first, then model calls, then the
embedding pass over what is left.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from pipelines.core.records import GoldenItem
from pipelines.core.text import token_f1, words
from pipelines.golden import prompts
from pipelines.models.budget import BUDGET_REASON, is_refusal
from pipelines.models.llm import LLM, LLMResult

log = logging.getLogger(__name__)
MIN_WORDS, MAX_WORDS = 4, 60
TRIVIAL_F1 = 0.5
GROUNDED_SHARE = 1.0
VAGUE_START = re.compile(r"^\s*(¿\s*)?(it|this|that|they|these|esto|eso|ello|esta|este)\b", re.I)
INTERROGATIVE = re.compile(
    r"\?|^\s*(what|how|why|when|where|which|who|can|does|is|are|search|busca)\b", re.I
)


@dataclass
class FilterOutcome:
    kept: list[GoldenItem]
    rejected: list[dict] = field(default_factory=list)
    funnel: dict[str, int] = field(default_factory=dict)


def _reject(outcome: FilterOutcome, item: GoldenItem, reason: str, detail: str) -> None:
    outcome.rejected.append({**item.model_dump(mode="json"), "reason": reason, "detail": detail})


def ambiguity_reason(item: GoldenItem) -> str | None:
    n = len(words(item.question))
    if n < MIN_WORDS:
        return f"question has {n} words (< {MIN_WORDS})"
    if n > MAX_WORDS:
        return f"question has {n} words (> {MAX_WORDS})"
    if VAGUE_START.match(item.question):
        return "question starts with a pronoun that refers to nothing"
    if not INTERROGATIVE.search(item.question) and item.qtype != "tool":
        return "not phrased as a question"
    return None


def filter_items(
    items: Sequence[GoldenItem], judge: LLM, embed, *, near_duplicate_cosine: float
) -> FilterOutcome:
    """`embed(texts) -> list[vector]`; `judge` answers closed-book and judges grounding."""
    outcome = FilterOutcome(kept=[])
    funnel = outcome.funnel
    funnel["generated"] = len(items)

    stage: list[GoldenItem] = []
    for item in items:
        reason = ambiguity_reason(item)
        if reason:
            _reject(outcome, item, "ambiguous_or_length", reason)
        else:
            stage.append(item)
    funnel["after_ambiguity_length"] = len(stage)

    # Closed book: a question any model answers without the corpus measures nothing.
    answerable = [i for i in stage if i.qtype in ("single_hop", "multi_hop")]
    closed = judge.run_many_sync(
        prompts.ClosedBookAnswer(), [prompts.QuestionInput(question=i.question) for i in answerable]
    )
    trivial = {}
    for item, result in zip(answerable, closed):
        if not result.ok:
            trivial[item.item_id] = _judge_failed(result, "closed-book check")
        elif (f1 := token_f1(result.value.answer, item.reference_answer)) >= TRIVIAL_F1:
            trivial[item.item_id] = (
                "trivial_closed_book",
                f"answered without context (token F1 {f1:.2f})",
            )
    stage = _apply(outcome, stage, trivial)
    funnel["after_closed_book"] = len(stage)

    # Grounding: every claim of the reference must be supported by its gold chunks.
    grounded_needed = [i for i in stage if i.reference_contexts]
    verdicts = judge.run_many_sync(
        prompts.GroundingJudge(),
        [
            prompts.GroundingInput(answer=i.reference_answer, contexts=i.reference_contexts)
            for i in grounded_needed
        ],
    )
    ungrounded = {}
    for item, result in zip(grounded_needed, verdicts):
        if not result.ok:
            ungrounded[item.item_id] = _judge_failed(result, "grounding check")
            continue
        claims = result.value.claims
        supported = sum(c.supported for c in claims)
        if not claims or supported / len(claims) < GROUNDED_SHARE:
            ungrounded[item.item_id] = (
                "reference_not_grounded",
                f"{supported}/{len(claims)} claims supported by the gold chunks",
            )
    stage = _apply(outcome, stage, ungrounded)
    funnel["after_grounding"] = len(stage)

    # Near-duplicates: keep the first of each group (items arrive in a stable order).
    if stage:
        vectors = np.asarray(embed([i.question for i in stage]), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-12
        keep: list[int] = []
        duplicates = {}
        for idx in range(len(stage)):
            if keep:
                sims = vectors[keep] @ vectors[idx]
                best = int(np.argmax(sims))
                if sims[best] >= near_duplicate_cosine:
                    duplicates[stage[idx].item_id] = (
                        "near_duplicate",
                        f"cosine {sims[best]:.3f} with {stage[keep[best]].item_id}",
                    )
                    continue
            keep.append(idx)
        stage = _apply(outcome, stage, duplicates)
    funnel["after_near_duplicates"] = len(stage)
    funnel["kept"] = len(stage)
    outcome.kept = stage
    log.info("filter funnel: %s; judge %s", funnel, judge.counters.summary())
    return outcome


def _judge_failed(result: LLMResult, check: str) -> tuple[str, str]:
    """The rejection of an item a check could not judge: "budget" when the token budget refused the
    call."""
    reason = BUDGET_REASON if is_refusal(result.error) else "judge_failed"
    return reason, f"{check} failed: {result.error}"


def _apply(
    outcome: FilterOutcome, stage: list[GoldenItem], verdicts: dict[str, tuple[str, str]]
) -> list[GoldenItem]:
    for item in stage:
        if item.item_id in verdicts:
            _reject(outcome, item, *verdicts[item.item_id])
    return [i for i in stage if i.item_id not in verdicts]

"""Answer correctness: is the answer right against the golden reference answer (not: is it supported
by its contexts, which is faithfulness).

`AnswerCorrectnessPrompt` (the judge model) grades each answer against the item's reference answer,
adversarial items' "not enough information" included: a 0/1 score per item (`answer_correctness`),
reported and gated like the other metrics, so answers that lose their facts (cut short, wrong) fail
the gate even where every remaining sentence is faithful. The same verdict starts the
retrieval-vs-generation attribution (`retrieval.attribute`). Skipped with the reason when there is
no answer or no reference; failed when the judge call failed, never a 0.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from pipelines.core.records import GoldenItem, Score
from pipelines.core.text import abstains
from pipelines.models.llm import LLMResult
from pipelines.models.offline_judge import claims, support
from pipelines.models.prompts import Prompt

CORRECTNESS = "answer_correctness"
CORRECT_SHARE = 0.5
"""Offline: share of the reference's claims the answer must state for the answer to be correct."""


class CorrectnessInput(BaseModel):
    question: str
    answer: str
    reference: str


class CorrectnessVerdict(BaseModel):
    correct: bool
    reason: str


class AnswerCorrectnessPrompt(Prompt[CorrectnessInput, CorrectnessVerdict]):
    """Is the answer right, against the reference answer? (Not: is it supported by its contexts —
    that is faithfulness.)"""

    name = "judge_answer_correct"
    input_model, output_model = CorrectnessInput, CorrectnessVerdict
    instructions = """
You grade an assistant's answer against a reference answer written by an expert. The answer is
correct when it states the reference's key facts and contradicts none of them; extra detail that
does not contradict the reference is allowed; wording and language may differ. When the reference
says there is not enough information, the answer is correct only if it says so too. An answer that
says there is not enough information when the reference answers is not correct. Give a one-sentence
reason.
"""

    def offline(self, inputs: CorrectnessInput) -> CorrectnessVerdict:
        """Lexical: correct when the answer states at least half of the reference's claims (each
        judged by the offline claim-verification rule: content words, numbers and names present);
        abstentions must match."""
        reference_abstains, answer_abstains = abstains(inputs.reference), abstains(inputs.answer)
        if reference_abstains or answer_abstains:
            same = reference_abstains == answer_abstains
            if same:
                return CorrectnessVerdict(
                    correct=True, reason="both say there is not enough information"
                )
            who = "the answer" if answer_abstains else "the reference"
            return CorrectnessVerdict(
                correct=False, reason=f"only {who} says there is not enough information"
            )
        reference_claims = claims(inputs.reference)
        if not reference_claims:
            return CorrectnessVerdict(
                correct=False, reason="the reference states no claim to compare with"
            )
        stated = [claim for claim in reference_claims if support(claim, inputs.answer)[0]]
        share = len(stated) / len(reference_claims)
        return CorrectnessVerdict(
            correct=share >= CORRECT_SHARE,
            reason=f"the answer states {len(stated)} of the reference's {len(reference_claims)} claim(s) "
            f"(offline rule: ≥ {CORRECT_SHARE:.0%})",
        )


def correctness_input(row: dict[str, Any]) -> CorrectnessInput | str:
    """What the correctness judge grades of one answered response row, or why there is nothing to
    grade. Unlike the reference-based ragas metrics, adversarial items are graded: their reference
    says there is not enough information, and an answer that makes something up instead is wrong."""
    item = GoldenItem.model_validate(row["item"])
    if not (row["answer"] or "").strip():
        return "the target returned no answer to grade"
    if not item.reference_answer.strip():
        return "the item has no reference answer to grade against"
    return CorrectnessInput(
        question=item.question, answer=row["answer"], reference=item.reference_answer
    )


def correctness_score(
    item_id: str,
    stratum: str,
    graded: CorrectnessInput | str,
    verdict: LLMResult[CorrectnessVerdict] | None,
    **labels: Any,
) -> Score:
    """`answer_correctness` of one item: 1.0 correct, 0.0 wrong; skipped (nothing to grade) or
    failed (the judge call failed) with the reason, never a 0."""
    common = dict(**labels, item_id=item_id, stratum=stratum, metric=CORRECTNESS)
    if isinstance(graded, str):
        return Score(**common, value=None, status="skipped", error=graded)
    if not verdict.ok:
        return Score(
            **common,
            value=None,
            status="failed",
            error=f"correctness judge failed: {verdict.error}",
        )
    return Score(**common, value=float(verdict.value.correct), status="ok")

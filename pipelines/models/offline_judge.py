"""The offline judge's one rule for claims: what a text claims, and whether evidence supports a
claim.

Every offline judgement goes through these functions — ragas' requests answered offline
(`ragas_adapter`) and ragwatch's own judge prompts (`pipelines.evaluation.metrics.judge_prompts`)
alike — so a sharper rule (catching swapped numbers or entities, say) changes every path at once.
"""

from __future__ import annotations

from pipelines.core.language import detect_language, template_language
from pipelines.core.text import (
    STOPWORDS,
    abstains,
    content_tokens,
    coverage,
    fold,
    missing_facts,
    sentences,
    words,
)

SUPPORTED = 0.6
"""Share of a claim's content words that must occur in the evidence for the claim to count as
supported."""


def claims(text: str) -> list[str]:
    """A text's claims: its sentences with content words, or the whole text when it is one short
    phrase."""
    found = [sentence for sentence in sentences(text) if content_tokens(sentence)]
    if found:
        return found
    flat = " ".join(text.split())
    return [flat] if content_tokens(flat) else []


def support(claim: str, evidence: str) -> tuple[int, str]:
    """(1, reason) when `evidence` supports `claim`, else (0, reason); the reason says why, for a
    person."""
    share = coverage(claim, evidence)
    # Word overlap alone passes a claim with one number or name swapped: those must be in the text
    # too.
    missing = missing_facts(claim, evidence)
    verdict = int(share >= SUPPORTED and not missing)
    reason = f"{share:.0%} of the statement's content words are in the text (offline rule: ≥ {SUPPORTED:.0%})"
    if missing:
        reason += f"; numbers and names not in the text: {', '.join(missing)}"
    return verdict, reason


def useful(context: str, reference: str) -> tuple[int, str]:
    """A context is useful for arriving at the reference answer when it supports one of its
    claims."""
    verdicts = [support(claim, context) for claim in claims(reference)]
    return max(verdicts, default=(0, "the reference answer makes no claim"), key=lambda v: v[0])


QUESTION_TEMPLATES = {
    "en": [
        "What does the documentation say about {terms}?",
        "How does {terms} work?",
        "What should I know about {terms}?",
    ],
    "es": [
        "¿Qué dice la documentación sobre {terms}?",
        "¿Cómo funciona {terms}?",
        "¿Qué hay que saber sobre {terms}?",
    ],
}
"""Per language; a response in another (or `und`) is asked back in English (`template_language`)."""
QUESTION_TERMS = 8


def question_back(response: str, sample: int) -> tuple[str, int]:
    """(a question the response answers, 1 when the response is noncommittal): sample k asks about
    the k-th claim of the response, with the k-th template, so the samples of one response
    differ."""
    parts = claims(response) or [response]
    part = parts[sample % len(parts)]
    terms = list(
        dict.fromkeys(w for w in words(part) if len(fold(w)) > 2 and fold(w) not in STOPWORDS)
    )
    templates = QUESTION_TEMPLATES[template_language(detect_language(response), QUESTION_TEMPLATES)]
    question = templates[sample % len(templates)].format(
        terms=" ".join(terms[:QUESTION_TERMS]) or part
    )
    return question, int(abstains(response))

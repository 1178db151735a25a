"""What the coverage step found, as the run folder, the results DB's run params, the summary and the
report hold it.

Computed by coverage/ (estimate.py: StratumCoverage, threshold.py: CoverageThreshold, topic_cut.py:
TopicCut, clusters.py: UncoveredCluster), read by the outputs: kept here, below both.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

ALL = "all"
"""The stratum label of the whole day."""


class StratumCoverage(BaseModel):
    stratum: str
    """`app/language`, or "all"."""
    day_traces: int
    """Traces of the day's sample in the stratum."""
    questions: int
    """Distinct questions embedded and matched: the n of the interval."""
    covered: int
    """Distinct questions matched as covered."""
    traces: int = 0
    """The embedded traces those questions stand for (a question asked three times: three): the
    volume."""
    covered_traces: int = 0
    matched: float | None = None
    """Share of the traces whose question was matched as covered: the matcher's verdicts, errors
    included."""
    effective_questions: float | None = None
    """The n behind `matched`: the distinct questions, for the day their effective number
    (Korn–Graubard)."""
    ratio: float | None
    """Share of the traces whose question is covered: `matched` corrected for the matcher's error
    rates (coverage/correction.py); None where they are unknown."""
    ci_low: float | None
    ci_high: float | None
    """Its 95 % interval from the day's questions, the matcher's rates held at their calibration:
    what two days measured against one golden set are compared by."""
    level_ci_low: float | None = None
    level_ci_high: float | None = None
    """Its 95 % interval with the rates' own uncertainty added (they rest on the golden set's user
    questions): how well the level itself is known."""


class LanguageRates(BaseModel):
    language: str
    positives: int
    negatives: int
    tpr: float | None
    fpr: float | None


class CoverageThreshold(BaseModel):
    value: float | None
    """Similarity (question vs golden passage) at or above which a question is covered; None: none
    calibrated nor set."""
    method: str
    """"calibrated" (Youden's J on user questions), "setting" (RAGWATCH_COVERAGE_THRESHOLD) or
    "uncalibrated"."""
    signal: str = "embedding cosine"
    """What the threshold is a similarity of: the embedding model's cosine, or
    coverage.lexical.SIGNAL."""
    evidence: int = 0
    """Golden items with a user's question (source trace or human) in a language with golden
    passages."""
    positives: int = 0
    """Of them, answerable ones: their nearest golden passage is a positive."""
    negatives: int = 0
    """Their nearest other-document passages, plus the unanswerable traces' nearest passages."""
    tpr: float | None = None
    """Share of positives at or above the threshold: user questions the golden set answers, matched
    as covered."""
    fpr: float | None = None
    """Share of negatives at or above it: how often a question on a subject the golden set lacks
    passes for covered."""
    auc: float | None = None
    """P(a positive is more similar than a negative), ties half."""
    note: str = ""
    by_language: list[LanguageRates] = []
    """The same rates per language, at the same threshold: a topic (one language's questions) is
    weighed by its language's."""


class TopicCut(BaseModel):
    similarity: float
    """Average cosine at which the uncovered questions' clustering is cut."""
    method: str
    """"calibrated" (best adjusted Rand index against the golden questions' documents) or
    "default"."""
    calibrated_on: str = ""
    """"user questions" (golden items from traces or people) or "generated questions"."""
    questions: int = 0
    documents: int = 0
    adjusted_rand: float | None = None
    """How well the cut's clusters of the golden questions match their documents (1: exactly, 0:
    chance)."""
    note: str = ""


class Representative(BaseModel):
    trace_id: str
    app: str
    question: str


class UncoveredCluster(BaseModel):
    cluster_id: str
    language: str
    questions: int
    """Distinct uncovered questions of the day's embedded sample in the cluster."""
    traces: int = 0
    """The embedded traces that asked them (the volume)."""
    estimated_traces: float
    """The day's sampled traces the cluster stands for (questions weighted by their stratum's
    sampling)."""
    share: float
    """estimated_traces / the day's sampled traces."""
    representatives: list[Representative]
    matched_questions: int = 0
    """The day's distinct questions matched as covered that lie in the topic (nearest its questions
    of all topics, within the topic cut): with its own, the topic's questions."""
    matched_share: float | None = None
    """Share of the topic's traffic (its own questions' and those matched ones') matched as
    covered."""
    coverage: float | None = None
    """Share of the topic's traffic the golden set covers: `matched_share` corrected for the
    matcher's error rates in its language like the day's level; None where they are unknown."""
    coverage_ci_low: float | None = None
    coverage_ci_high: float | None = None
    """Its 95 % interval from the topic's distinct questions, the rates held at their
    calibration."""
    covered_q_value: float | None = None
    """How likely a covered topic is to have as few matched questions (beta-binomial at its
    language's TPR, coverage/topic_gaps.py), adjusted over the day's topics (Benjamini–Hochberg): at
    most 0.05, the topic is listed as missed. None where the rates are unknown."""
    gap_traces: float = 0.0
    """The day's sampled traces on the topic the golden set does not cover: (1 − coverage) × the
    topic's traffic; `estimated_traces` where coverage is unknown."""
    gap_share: float = 0.0
    """gap_traces / the day's sampled traces."""


class GoldenCoverage(BaseModel):
    status: Literal["ok", "failed"]
    reason: str = ""
    golden: str
    golden_version: str | None = None
    golden_questions: int = 0
    golden_passages: int = 0
    """Distinct reference passages of the golden items: what a day's question is matched against."""
    threshold: CoverageThreshold | None = None
    topic_cut: TopicCut | None = None
    max_questions: int
    """The embedding budget: the day's questions embedded at most."""
    strata: list[StratumCoverage] = []
    """Per app/language, then "all" (the day, weighted by the strata's traces)."""
    level_note: str = ""
    """Why the strata's levels are None (the matched shares could not be corrected); empty when they
    are not."""
    min_cluster_size: int = 0
    """Fewest distinct uncovered questions that make a topic."""
    clusters: list[UncoveredCluster] = []
    """The topics the golden set misses, the largest gap (`gap_traces`) first: the uncovered
    questions' topics with fewer matched questions than a covered topic has (`covered_q_value` ≤
    0.05; every topic where the rates are unknown)."""
    matcher_misses: list[UncoveredCluster] = []
    """The other uncovered questions' topics, matched about as often as a covered topic: likely the
    matcher's misses on a subject the golden set covers; the largest gap first. Not queued for
    review."""
    unclustered: int = 0
    """Distinct uncovered questions in no topic (in groups smaller than `min_cluster_size`: one-off
    questions)."""

    @property
    def day(self) -> StratumCoverage | None:
        return next((s for s in self.strata if s.stratum == ALL), None)

"""What the coverage step found, as the run folder, the results DB's run params, the summary and the report hold it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from pipelines.evaluation.coverage.estimate import ALL, StratumCoverage
from pipelines.evaluation.coverage.threshold import CoverageThreshold
from pipelines.evaluation.coverage.topic_cut import TopicCut


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
    """The day's sampled traces the cluster stands for (questions weighted by their stratum's sampling)."""
    share: float
    """estimated_traces / the day's sampled traces."""
    representatives: list[Representative]


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
    min_cluster_size: int = 0
    """Fewest distinct uncovered questions that make a topic."""
    clusters: list[UncoveredCluster] = []
    """The uncovered questions' topics, largest first."""
    unclustered: int = 0
    """Distinct uncovered questions in no topic (in groups smaller than `min_cluster_size`: one-off questions)."""

    @property
    def day(self) -> StratumCoverage | None:
        return next((s for s in self.strata if s.stratum == ALL), None)

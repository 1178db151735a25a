"""What a run would cost before it runs (`--dry-run`): the records the eval and golden estimates fill in.

The rows mirror the usage rows a run records (usage.py: stage × metric × role), so an estimate can be compared
with what the run then records. How each estimate is computed is said where it is (evaluation/runs/estimate.py,
golden/estimate.py).
"""

from __future__ import annotations

from pydantic import BaseModel


class StageEstimate(BaseModel):
    stage: str
    metric: str
    role: str
    unit: str
    """What the stage's requests grow with: judged traces, noise traces, items, generation jobs."""
    units: int
    requests: float | None
    """Requests the servers would see (None: unknown)."""
    cache_hits: float | None
    prompt_tokens: float | None
    completion_tokens: float | None
    basis: str
    """Where the rates come from, in words."""


class RunEstimate(BaseModel):
    subject: str
    """What is estimated: an eval run id, a golden build."""
    units: dict[str, int]
    """unit name -> count in the run."""
    cached_units: dict[str, int]
    """unit name -> units assumed answered by the LLM cache."""
    history: list[str]
    """The past runs (or builds) the rates come from."""
    rows: list[StageEstimate]

    def total(self, count: str) -> float | None:
        """The sum over the rows; None when a row does not know it."""
        values = [getattr(row, count) for row in self.rows]
        return None if any(v is None for v in values) else sum(values)

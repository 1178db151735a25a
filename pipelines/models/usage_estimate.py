"""What a run would cost before it runs (`--dry-run`): the records the eval and golden estimates
fill in.

The rows mirror the usage rows a run records (usage.py: stage × metric × role), so an estimate can
be compared with what the run then records. How each estimate is computed is said where it is
(evaluation/runs/estimate.py, golden/estimate.py).
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel

USAGE_COUNTS = ("requests", "cache_hits", "prompt_tokens", "completion_tokens")


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

    @classmethod
    def for_stage(
        cls,
        key: tuple[str, str, str],
        unit: str,
        *,
        units: int,
        basis: str,
        requests: float | None = None,
        cache_hits: float | None = None,
        prompt_tokens: float | None = None,
        completion_tokens: float | None = None,
    ) -> StageEstimate:
        """The row of the usage key `key` (stage, metric, role); a count not given is unknown."""
        stage, metric, role = key
        return cls(
            stage=stage,
            metric=metric,
            role=role,
            unit=unit,
            units=units,
            requests=requests,
            cache_hits=cache_hits,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            basis=basis,
        )

    @classmethod
    def at_past_rates(
        cls,
        key: tuple[str, str, str],
        unit: str,
        *,
        units: int,
        cached: int,
        used: Mapping[str, float],
        per: float,
        rate_unit: str,
        source: str,
    ) -> StageEstimate:
        """The stage `key` (stage, metric, role) at the rates of the past: `used` counts what `per`
        past units cost (USAGE_COUNTS). The fresh units send requests at the past rate; a cached
        unit's requests, and the hits it had, all come back from the cache as hits. `source` says
        where the rates come from."""
        requests_per, hits_per = used["requests"] / per, used["cache_hits"] / per
        per_request = {
            c: used[c] / used["requests"] if used["requests"] else 0.0
            for c in ("prompt_tokens", "completion_tokens")
        }
        fresh = units - cached
        requests = fresh * requests_per
        return cls.for_stage(
            key,
            unit,
            units=units,
            requests=requests,
            cache_hits=fresh * hits_per + cached * (requests_per + hits_per),
            prompt_tokens=requests * per_request["prompt_tokens"],
            completion_tokens=requests * per_request["completion_tokens"],
            basis=f"{requests_per:.2f} requests per {rate_unit}, {per_request['prompt_tokens']:.0f} + "
            f"{per_request['completion_tokens']:.0f} tokens per request {source}",
        )


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

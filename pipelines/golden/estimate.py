"""What a golden build would cost before it runs (`ragwatch golden build --dry-run`); sends nothing,
writes nothing.

Units: the generation jobs the plan would make now (the plan is computed, not written). Rates: from
the last released build of the set (its manifest keeps `planned`, the jobs per kind, and `cost`, per
role): generator and filter-judge requests and cache hits per planned job, prompt and completion
tokens per request. The filters' calls are counted per job too: a job yields a stable number of
candidates, each checked by the same filters. Cache: with the LLM cache on and a model server (the
offline backend caches nothing), a job identical to one of the last plan's (`build/plan.jsonl`: same
kind, source and prompt inputs) is assumed answered by the cache, and so are its candidates' filter
calls (they ask about the same candidates); the cache itself is not read. Without a released build
there is no rate to apply: the jobs are shown and the requests and tokens are unknown.
"""

from __future__ import annotations

import json
from datetime import date

from pipelines.core.files import read_jsonl
from pipelines.core.settings import Settings
from pipelines.golden.params import GoldenParams
from pipelines.models.usage_estimate import RunEstimate, StageEstimate
from pipelines.stores.partitions import read_manifest

UNIT = "generation jobs"
ROLES = {"generator": "golden_generate", "judge": "golden_filter"}


def estimate_build(settings: Settings, params: GoldenParams, *, logical_date: date) -> RunEstimate:
    from pipelines.golden.steps import paths, planned_jobs

    p = paths(settings, params.name)
    jobs, _, _ = planned_jobs(settings, params, logical_date=logical_date)
    last_plan = {_identity(row) for row in read_jsonl(p.plan)} if p.plan.exists() else set()
    caches = settings.llm_cache and settings.llm_backend != "offline"
    cached = sum(_identity(job.model_dump()) in last_plan for job in jobs) if caches else 0
    manifest = read_manifest(p.released_manifest) if p.released_manifest.exists() else None
    cost, planned = (
        (manifest or {}).get("cost"),
        sum(((manifest or {}).get("planned") or {}).values()),
    )
    rows = []
    for role, stage in ROLES.items():
        if not cost or not planned:
            basis = "no released build of this set to measure rates on"
            rows.append(
                StageEstimate.for_stage((stage, "all", role), UNIT, units=len(jobs), basis=basis)
            )
            continue
        rows.append(
            StageEstimate.at_past_rates(
                (stage, "all", role),
                UNIT,
                units=len(jobs),
                cached=cached,
                used=cost[role],
                per=planned,
                rate_unit="job",
                source=f"in {manifest.get('version')}",
            )
        )
    history = [f"golden/{params.name}/{manifest['version']}"] if cost and planned else []
    return RunEstimate(
        subject=f"golden build {params.name}",
        units={UNIT: len(jobs)},
        cached_units={UNIT: cached},
        history=history,
        rows=rows,
    )


def _identity(job: dict) -> tuple[str, str]:
    """What makes two jobs the same requests: the job id (kind and source) and the prompt inputs."""
    return job["job_id"], json.dumps(job["payload"], sort_keys=True, ensure_ascii=False)

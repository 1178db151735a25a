"""The golden build's share of `RAGWATCH_LLM_BUDGET_TOKENS` (models/budget.py says how tokens are
counted).

Half of the budget goes to generation, in equal shares per mapped generation batch (fixed at plan
time, as the eval's judge batches are: batches are separate processes); the filters get what
generation left. Filtering a candidate costs about what generating it did (a closed-book answer and
a grounding judgement), so a build cut short by the budget keeps about as many checked items as it
generated, rather than generating many that no filter could check. A generation job the budget
refused is a failed job with the error "budget"; a candidate whose filter call was refused is
rejected with the reason "budget", never kept unchecked. The funnel and the manifest's `cost.budget`
count both.
"""

from __future__ import annotations

from typing import Any

from pipelines.models.budget import BUDGET_REASON, TokenBudget

GENERATION_SHARE = 0.5


def plan_budget(cap: int | None, batches: int) -> dict[str, int] | None:
    """What the plan records: the cap and each generation batch's share; None without a cap."""
    if cap is None:
        return None
    return {"cap": cap, "per_generation_batch": int(cap * GENERATION_SHARE) // max(1, batches)}


def generation_budget(plan_meta: dict[str, Any]) -> TokenBudget:
    budget = plan_meta.get("budget")
    return TokenBudget(budget["per_generation_batch"] if budget else None)


def filter_budget(plan_meta: dict[str, Any], generation_spent: int) -> TokenBudget:
    """What generation left of the cap."""
    budget = plan_meta.get("budget")
    return TokenBudget(max(0, budget["cap"] - generation_spent) if budget else None)


def budget_counts(
    plan_meta: dict[str, Any], failed_jobs: list[dict], rejected: list[dict]
) -> dict[str, int] | None:
    """The manifest's `cost.budget`: the cap, generation jobs not run and candidates not checked for
    it."""
    budget = plan_meta.get("budget")
    if budget is None:
        return None
    return {
        "cap": budget["cap"],
        "per_generation_batch": budget["per_generation_batch"],
        "generation_jobs_skipped": sum(job["error"] == BUDGET_REASON for job in failed_jobs),
        "candidates_rejected": sum(item["reason"] == BUDGET_REASON for item in rejected),
    }

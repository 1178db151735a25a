"""A run's token budget (`RAGWATCH_LLM_BUDGET_TOKENS`) shared between its steps, and the scores it
skipped.

A run's judge batches are separate processes, possibly on several workers at once, so they cannot
draw on one live count without a shared store and a lock on every request. The budget is divided
instead, once, in prepare: the offline prepare step spends on the system under test's generator
first (its own `TokenBudget` capped at the whole budget), and what it leaves is split in equal
shares, one per planned judge batch (`RunBudget`, kept in run.json). A batch never spends more than
its share, so the run never spends more than the cap (plus the requests in flight when a share runs
out, models/budget.py). A batch that needs less leaves its rest unspent: other batches cannot borrow
it, so a run may skip some scores below the cap. A rerun of a batch gets its share again; what it
finds in the LLM cache is free.

Every score whose model call the budget refused is `skipped` with the reason "budget"
(`BUDGET_REASON`), never dropped and never `failed`: the report and the summary count them, and the
gate treats them as missing (a skipped score is not ok, statistics/gate/rule.regression_gate).
"""

from __future__ import annotations

from collections.abc import Iterable

from pipelines.core.records import Score
from pipelines.evaluation.results.run import RunBudget
from pipelines.models.budget import BUDGET_REASON, TokenBudget, is_refusal


def divide_budget(cap: int | None, *, prepare_tokens: int, batches: int) -> RunBudget | None:
    """The equal shares of what prepare left; None without a cap."""
    if cap is None:
        return None
    left = max(0, cap - prepare_tokens)
    return RunBudget(cap=cap, prepare_tokens=prepare_tokens, per_batch=left // max(1, batches))


def batch_budget(run_budget: RunBudget | None) -> TokenBudget:
    """The budget one judge batch's LLM clients share."""
    return TokenBudget(run_budget.per_batch if run_budget is not None else None)


def skipped_for_budget(scores: Iterable[Score]) -> list[Score]:
    """Scores whose failure is the budget's refusal, as `skipped` with the reason "budget"; the
    others as they are."""
    return [
        score.model_copy(update={"status": "skipped", "error": BUDGET_REASON})
        if score.status == "failed" and is_refusal(score.error)
        else score
        for score in scores
    ]


def budget_skips(scores: Iterable[Score]) -> int:
    """Scores skipped because the run's token budget was spent."""
    return sum(score.status == "skipped" and score.error == BUDGET_REASON for score in scores)

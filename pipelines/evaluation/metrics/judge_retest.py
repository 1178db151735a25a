"""The judge's retest: a share of the judged items judged a second time, to measure the judge's own
noise.

Which items: those whose hash of (run id, item id) falls in the lowest `share` of the hash space
(`RAGWATCH_JUDGE_RETEST_SHARE`, the runs' `judge_retest_share`): a rerun of the run, or of one of
its batches, retests the same items, whatever the batch sizes; on average `share` × the judged items
are retested.

How: a second judge client of the same model whose cache entries live in a namespace of their own
(`LLM.cache_namespace`): it never reads the first judgement's reply (that would be the first
judgement again), yet a rerun of the same run replays its own retest replies, so a backfill stays
idempotent and a cached rerun sends nothing. It sends OpenAI's `seed` = `RETEST_SEED` where a prompt
samples (temperature > 0: the answer-relevancy questions; ragwatch's claim extraction and
verification are greedy, temperature 0, so they are sent unchanged and a server may well give the
same verdicts again: that is a finding about the judge, not a flaw of the retest). The second client
also has its own claim memory (judge.py), so the retest extracts claims again. Its requests count
under the usage stage `judge_retest`.

The second judgement never replaces the first: the retest's score rows go to the batch's own retest
file (`RunPaths.retests`), which the aggregates, the gate and the results DB never read; the
judge-noise statistics (statistics/judge_noise.py) pair them with the first judgements.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from pipelines.evaluation.metrics.judge import JudgeInput, judge_items
from pipelines.models.budget import TokenBudget
from pipelines.models.embeddings import Embedder
from pipelines.models.backends import build_llm
from pipelines.models.llm import LLM
from pipelines.models.usage import scope
from pipelines.core.records import Score, Suite
from pipelines.core.settings import Settings

RETEST_STAGE = "judge_retest"
RETEST_SEED = 1
"""The retest's sampling seed. The first judgement sends none (the server draws), so any fixed seed
is an independent draw; fixed, so that a rerun of the retest on vLLM draws the same samples."""


def retested(run_id: str, item_id: str, share: float) -> bool:
    """Whether the item is among the run's retested share (a hash of run and item, uniform on [0,
    1))."""
    digest = hashlib.sha256(f"judge-retest\x00{run_id}\x00{item_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") < share * 2**64


RETEST_CACHE_NAMESPACE = "judge-retest"


def build_retest_judge(settings: Settings, budget: TokenBudget) -> LLM:
    """The judge model again, with the retest's cache namespace and seed, spending from the batch's
    `budget`."""
    judge = build_llm(settings, "judge")  # a new client: the first judgement's is not touched
    judge.seed, judge.cache_namespace, judge.budget = RETEST_SEED, RETEST_CACHE_NAMESPACE, budget
    return judge


async def retest_items(
    items: Sequence[JudgeInput],
    metrics: Sequence[str],
    judge: LLM,
    embedder: Embedder | None,
    *,
    share: float,
    run_id: str,
    suite: Suite,
    dataset_version: str,
) -> list[Score]:
    """The second judgement of the retested share of `items` (`judge` from build_retest_judge), as
    score rows."""
    chosen = [item for item in items if retested(run_id, item.item_id, share)]
    if not chosen or not metrics:
        return []
    with scope(stage=RETEST_STAGE):
        return await judge_items(
            chosen,
            metrics,
            judge,
            embedder,
            run_id=run_id,
            suite=suite,
            dataset_version=dataset_version,
        )

"""What an eval run would cost before it is run (`--dry-run`): requests and tokens per stage and
metric.

Nothing is sent and nothing is written: the estimate reads what the run would evaluate (the online
selection, a read of three columns of the day's sample; the offline golden split and its `limit`
subset) and the results DB.

Definitions, per stage × metric × role (the rows a run records, runs/cost.py):
- units: what a stage's requests grow with. Online: judged traces for `judge`, noise traces for the
  `noise_*` stages. Offline: the run's items for every stage (the golden set's mix of question types
  is stable).
- rates: from the last `HISTORY_RUNS` runs of the suite and target with the same judge model that
  sent requests (a run served entirely by the cache tells nothing about tokens): requests per unit,
  cache hits per unit (hits inside a fresh run: an arm asking what another arm just asked), prompt
  and completion tokens per request, each a ratio of sums.
- cache: a unit the results DB already holds scores for (the same trace or golden item in the run of
  the same day, or in the last run of the target) is assumed answered by the cache for every call it
  makes, when the LLM cache is on and the backend is a server (the offline backend caches nothing).
  The cache itself is not read: its keys depend on replies of earlier requests of the same item, so
  they cannot be known before the run; the assumption fails when that cache is another machine's (no
  shared `RAGWATCH_LLM_CACHE_URL`) or was cleared.
- requests = fresh units × requests per unit; cache hits = fresh units × hits per unit + cached
  units × (requests
  + hits) per unit; tokens = requests × tokens per request. Without such a run, the online stages
    fall back to the consolidated judge's fixed shape (`FALLBACK_PER_UNIT`: 3 judge requests per
    judged trace; about 5 more per noise trace), with tokens unknown; offline has no fallback (its
    shape depends on the metrics and the target), and says so.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

from sqlalchemy.engine import make_url

from pipelines.core.settings import Settings
from pipelines.evaluation.results.run import RunCost
from pipelines.models.offline import OFFLINE_MODEL
from pipelines.models.usage import STAGES
from pipelines.models.usage_estimate import USAGE_COUNTS, RunEstimate, StageEstimate
from pipelines.stores.results import EvalRun, ResultsStore, run_id

HISTORY_RUNS = 3
"""Past runs the rates are measured on: recent enough to follow prompt and model changes, enough to
smooth a day."""
LOOK_BACK = 20
"""Past runs searched for `HISTORY_RUNS` that sent requests."""
FALLBACK_PER_UNIT = {
    ("judge", "faithfulness", "judge"): 2.0,
    ("judge", "answer_relevancy", "judge"): 1.0,
    ("noise_clean", "answer", "generator"): 1.0,
    ("noise_clean", "faithfulness", "judge"): 2.0,
    ("noise_noisy", "answer", "generator"): 1.0,
    ("noise_control", "answer", "generator"): 1.0,
}
"""Online requests per unit without history, with ragwatch's consolidated judge prompts
(`RAGWATCH_JUDGE_IMPLEMENTATION =ragas` sends more): faithfulness is a claim extraction and a
verification, answer relevancy one request for all its generated questions, each noise arm an
answer; the noisy and control arms' judgements are left out (they depend on the answer: an
abstention is not judged)."""


def stage_unit(suite: str, stage: str) -> str:
    if suite == "online":
        return "noise traces" if stage.startswith("noise_") else "judged traces"
    return "items"


def run_units(run: EvalRun) -> dict[str, int]:
    """The units a stored run evaluated (see the module docstring)."""
    cost = RunCost.model_validate(run.cost)
    if run.suite == "online":
        return {
            "judged traces": cost.items,
            "noise traces": int((run.params.get("selection") or {}).get("noise", 0)),
        }
    return {"items": cost.items}


def judge_model(settings: Settings) -> str:
    """The judge model a run would record, without building a client (a client opens the LLM
    cache)."""
    return OFFLINE_MODEL if settings.llm_backend == "offline" else settings.judge.model


def has_results(settings: Settings) -> bool:
    """Whether there is a results DB to read: opening a SQLite URL creates its file, and a dry run
    writes nothing."""
    url = make_url(settings.resolved_results_url)
    return url.get_backend_name() != "sqlite" or bool(url.database and Path(url.database).exists())


def results_store(settings: Settings) -> ResultsStore | None:
    """The results DB to read history from; None where there is none yet."""
    return ResultsStore.from_settings(settings) if has_results(settings) else None


def history_runs(
    store: ResultsStore, suite: str, target: str, before: date, judge: str
) -> list[EvalRun]:
    """The last `HISTORY_RUNS` runs before `before` judged by `judge` that sent requests, newest
    first: another model's tokenizer and replies would not tell this one's tokens."""
    found = []
    for past in (
        reversed(store.runs(suite, LOOK_BACK, target=target, before=before))
        if store.exists()
        else []
    ):
        if (
            past.judge_model == judge
            and past.cost
            and RunCost.model_validate(past.cost).total("requests") > 0
        ):
            found.append(past)
        if len(found) == HISTORY_RUNS:
            break
    return found


def seen_items(
    store: ResultsStore, suite: str, target: str, day: date, history: list[EvalRun]
) -> set[str]:
    """Items (trace or golden ids) the results DB holds scores for: the same day's earlier run and
    the last run."""
    runs = {run_id(suite, day, target)} | ({history[0].run_id} if history else set())
    if not store.exists():
        return set()
    return {score.item_id for rid in runs for score in store.scores(rid)}


def estimate(
    suite: str,
    rid: str,
    units: dict[str, int],
    cached: dict[str, int],
    history: list[EvalRun],
    fallback: dict[tuple[str, str, str], float] | None = None,
) -> RunEstimate:
    """Rates from `history` applied to the run's units (see the module docstring)."""
    sums: dict[tuple[str, str, str], dict[str, float]] = {}
    past_units: dict[str, int] = {}
    for past in history:
        for unit, n in run_units(past).items():
            past_units[unit] = past_units.get(unit, 0) + n
        for row in RunCost.model_validate(past.cost).rows:
            counts = sums.setdefault(
                (row.stage, row.metric, row.role),
                dict.fromkeys(USAGE_COUNTS, 0.0),
            )
            for count in counts:
                counts[count] += getattr(row, count)
    rows = []
    for key, counts in sorted(
        sums.items(),
        key=lambda kv: (list(STAGES).index(kv[0][0]) if kv[0][0] in STAGES else len(STAGES), kv[0]),
    ):
        unit = stage_unit(suite, key[0])
        per = past_units.get(unit) or 0
        if not per:
            continue
        rows.append(
            StageEstimate.at_past_rates(
                key,
                unit,
                units=units.get(unit, 0),
                cached=cached.get(unit, 0),
                used=counts,
                per=per,
                rate_unit="unit",
                source=f"over {len(history)} past run(s)",
            )
        )
    if not history:
        for key, requests_per in (fallback or {}).items():
            unit = stage_unit(suite, key[0])
            fresh = units.get(unit, 0) - cached.get(unit, 0)
            rows.append(
                StageEstimate.for_stage(
                    key,
                    unit,
                    units=units.get(unit, 0),
                    requests=fresh * requests_per,
                    basis=f"no past run: {requests_per:g} per unit (the judge's fixed shape); tokens unknown",
                )
            )
    return RunEstimate(
        subject=rid,
        units=units,
        cached_units=cached,
        history=[past.run_id for past in history],
        rows=rows,
    )


def past_runs(
    settings: Settings, suite: str, target: str, day: date
) -> tuple[list[EvalRun], set[str]]:
    """The history the rates come from, and the items assumed cached (none when the cache would not
    answer)."""
    store = results_store(settings)
    if store is None:
        return [], set()
    try:
        history = history_runs(store, suite, target, day, judge_model(settings))
        return history, seen_items(store, suite, target, day, history) if cache_answers(
            settings
        ) else set()
    finally:
        store.dispose()


def cache_answers(settings: Settings) -> bool:
    """Whether repeated calls would be served by the LLM cache (the offline backend has none)."""
    return settings.llm_cache and settings.llm_backend != "offline"


def estimate_online(settings: Settings, day: date, params) -> RunEstimate:
    """The online eval of `day` with `params`, before it runs: the selection it would judge and the
    rates."""
    from pipelines.core.workspace import Workspace
    from pipelines.evaluation.online_selection import select_budget
    from pipelines.evaluation.runs.online import SUITE, TARGET, past_spread

    workspace = Workspace.from_settings(settings)
    if not workspace.has_traces(day):
        raise FileNotFoundError(
            f"no published sample for {day}: run trace_sampling for that day first"
        )
    target = (
        past_spread(settings, day, params.target_half_width)
        if params.target_half_width and has_results(settings)
        else None
    )
    selection = select_budget(
        workspace.traces_partition(day).parts,
        max_traces=params.max_traces,
        min_per_stratum=params.min_per_stratum,
        noise_share=params.noise_share,
        target=target,
    )
    units = {"judged traces": len(selection.judged), "noise traces": len(selection.noise)}
    history, seen = past_runs(settings, SUITE, TARGET, day)
    cached = {
        "judged traces": len(seen & set(selection.judged)),
        "noise traces": len(seen & set(selection.noise)),
    }
    return estimate(SUITE, run_id(SUITE, day, TARGET), units, cached, history, FALLBACK_PER_UNIT)


def estimate_offline(settings: Settings, params, *, logical_date: date) -> RunEstimate:
    """The offline eval with `params`, before it runs: the items it would evaluate and the rates."""
    from pipelines.evaluation.runs.prepare import SUITE, planned_items

    items, _, _ = planned_items(settings, params)
    ids = {item.item_id for item in items}
    history, seen = past_runs(settings, SUITE, params.target_name, logical_date)
    return estimate(
        SUITE,
        run_id(SUITE, logical_date, params.target_name),
        {"items": len(ids)},
        {"items": len(seen & ids)},
        history,
    )

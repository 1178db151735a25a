"""The token budget (RAGWATCH_LLM_BUDGET_TOKENS): nothing is sent once a run's tokens reach it,
every score that needed a request is `skipped` with the reason "budget" (never dropped, never
failed), and the gate counts those as missing. End to end on the online eval against the LLM
simulator over HTTP; the offline backend's estimate on its own."""

from __future__ import annotations

import json
from collections import Counter

from pipelines.evaluation.runs.online import measure_online_coverage
from pipelines.evaluation.outputs.push import build_registry
from pipelines.evaluation.runs.budget import skipped_for_budget
from pipelines.evaluation.runs.cost import read_usage
from pipelines.evaluation.runs.folder import judge_part
from pipelines.evaluation.runs.online import (
    finalize_online_eval,
    judge_online_batch,
    prepare_online_eval,
)
from pipelines.evaluation.runs.params import online_params
from pipelines.evaluation.runs.rag_prompt import Context, RagAnswerPrompt, RagInput
from pipelines.evaluation.statistics.gate.rule import regression_gate
from pipelines.core.files import read_jsonl
from pipelines.models.budget import BUDGET_REASON, REFUSAL, estimated_tokens
from pipelines.models.llm import OfflineLLM
from pipelines.models.simulator import SimulatorKnobs, running_simulator, served_stats
from pipelines.cli.prompt_catalog import all_prompts
from pipelines.core.records import Score
from pipelines.stores.results import ResultsStore
from pipelines.core.workspace import RunPaths
from tests.support.simulated import on_simulator
from tests.unit.pipelines.evaluation.runs.test_online import DAY, SMALL_DAY, indexed, publish_day  # noqa: F401 (a fixture)

PARAMS = dict(max_traces=12, min_per_stratum=3, noise_share=0.25, batch_size=5)


def run_day(settings):
    """prepare, the coverage, every batch one after the other, finalize: what the DAG's tasks do."""
    prepared = prepare_online_eval(settings, DAY, online_params(settings, **PARAMS))
    measure_online_coverage(settings, prepared.run_dir)
    for start, end in prepared.batches:
        judge_online_batch(settings, prepared.run_dir, start, end)
    return prepared, finalize_online_eval(settings, prepared.run_dir)


def tokens(rows) -> int:
    return sum(r.prompt_tokens + r.completion_tokens for r in rows)


def test_a_spent_budget_sends_nothing_more_and_skips_the_rest_for_budget(indexed):  # noqa: F811
    settings, chunks = indexed
    publish_day(settings, chunks, SMALL_DAY)
    # One request in flight per endpoint (judge, generator), so a batch overshoots its share by two
    # requests at most.
    one_at_a_time = {"max_concurrency": 1}
    with running_simulator(SimulatorKnobs(capacity=8), prompts=all_prompts()) as url:
        plain = on_simulator(settings, url, cache=False)
        plain = plain.model_copy(
            update={
                role: getattr(plain, role).model_copy(update=one_at_a_time)
                for role in ("generator", "judge")
            }
        )
        _, full = run_day(plain)
        full_tokens, full_requests = tokens(full.cost.rows), full.cost.total("requests")
        largest = 2_000
        assert full.cost.skipped_for_budget == 0 and full.cost.budget is None
        assert full_tokens / full_requests < largest / 4  # the overshoot bound below is not vacuous
        store = ResultsStore.from_settings(plain)
        full_scores = {(s.item_id, s.metric): s for s in store.scores(full.run_id)}
        store.dispose()

        cap = full_tokens // 3
        capped = plain.model_copy(update={"llm_budget_tokens": cap})
        before = served_stats(url)
        prepared, summary = run_day(capped)
        after = served_stats(url)
    run = RunPaths(prepared.run_dir)
    meta = json.loads(run.meta.read_text())
    assert meta["budget"] == {"cap": cap, "prepare_tokens": 0, "per_batch": cap // 3}
    per_batch = [read_usage(run.usage(judge_part(start))) for start, _ in prepared.batches]
    # What the servers saw is what the run recorded, and each batch stopped at its share (+ two
    # requests at most).
    assert (
        after["prompt_tokens"]
        + after["completion_tokens"]
        - before["prompt_tokens"]
        - before["completion_tokens"]
        == tokens(summary.cost.rows)
        == sum(tokens(rows) for rows in per_batch)
    )
    assert all(cap // 3 <= tokens(rows) <= cap // 3 + 2 * largest for rows in per_batch)
    assert summary.cost.total("requests") < full_requests

    store = ResultsStore.from_settings(capped)
    scores = store.scores(summary.run_id)
    store.dispose()
    # Never dropped: every score of the full run is there, ok or skipped for the budget; none failed
    # for it.
    assert {(s.item_id, s.metric) for s in scores} == set(full_scores)
    statuses = Counter((s.status, s.error) for s in scores if s.status != "ok")
    skipped = statuses[("skipped", BUDGET_REASON)]
    assert skipped > 0 and not any(REFUSAL in (s.error or "") for s in scores)
    assert not [s for s in scores if s.status == "failed"]
    assert summary.cost.skipped_for_budget == skipped and summary.cost.budget.cap == cap
    # A score that needs no model (tool-call validity) is never skipped for the budget.
    assert not [s for s in scores if s.metric == "tool_call_validity" and s.error == BUDGET_REASON]
    report = open(summary.report, encoding="utf-8").read()
    assert f"{skipped:,} scores skipped\nfor the budget" in report
    registry = build_registry([], suite="online", target="production", cost=summary.cost)
    assert (
        registry.get_sample_value(
            "rag_eval_llm_budget_skipped_scores", {"suite": "online", "target": "production"}
        )
        == skipped
    )


def test_the_offline_backend_is_charged_its_characters_and_refuses_past_the_cap():
    prompt = RagAnswerPrompt()
    inputs = [
        RagInput(
            question=f"How do I restart pod {i}?",
            language="en",
            sample=0,
            contexts=[Context(chunk_id="1", text="Restart it with kubectl rollout restart.")],
        )
        for i in range(3)
    ]
    llm = OfflineLLM()
    first = llm.run_sync(prompt, inputs[0])
    charge = estimated_tokens(
        json.dumps(prompt.messages(inputs[0]), ensure_ascii=False), first.value.model_dump_json()
    )
    llm = OfflineLLM()
    llm.budget.cap = (
        charge + 1
    )  # room for one call and a bit: the second is still sent, the third not
    results = llm.run_many_sync(prompt, inputs[:1]) + llm.run_many_sync(prompt, inputs[1:2])
    refused = llm.run_sync(prompt, inputs[2])
    assert all(r.ok for r in results) and llm.budget.spent > llm.budget.cap
    assert refused.error == REFUSAL and refused.attempts == 0
    assert llm.counters.calls == 2 and llm.budget.refused == 1


def test_the_gate_counts_scores_skipped_for_the_budget_as_missing():
    def recall(item: int, run: str, status: str = "ok") -> Score:
        return Score(
            run_id=run,
            suite="offline",
            item_id=f"q{item}",
            stratum="single_hop/en",
            metric="recall@5",
            value=1.0 if status == "ok" else None,
            status=status,
            error=None if status == "ok" else f"target failed: generation failed: {REFUSAL}",
            dataset_version="v1",
        )

    baseline = [recall(i, "base") for i in range(40)]
    kept = [recall(i, "cand") for i in range(30)]
    budget_skipped = skipped_for_budget([recall(i, "cand", "failed") for i in range(30, 40)])
    assert {(s.status, s.error) for s in budget_skipped} == {("skipped", "budget")}
    with_skips = regression_gate(kept + budget_skipped, baseline, ["recall@5"]).metrics[0]
    absent = regression_gate(kept, baseline, ["recall@5"]).metrics[0]
    # Ten of forty not ok: the not-ok share rises by 0.25 and the worst case drops by as much,
    # exactly as if those items had no score at all.
    assert not with_skips.passed and with_skips.checks_failed == absent.checks_failed
    assert set(with_skips.checks_failed) == {"worst_case_drop", "failure_rise"}
    assert with_skips.worst_case_diff == absent.worst_case_diff == -0.25
    assert with_skips.candidate_not_ok_share == absent.candidate_not_ok_share == 0.25


def test_a_golden_build_over_its_budget_counts_the_jobs_not_run_and_keeps_nothing_unchecked(
    settings, tmp_path
):
    import shutil

    from pipelines.corpus.steps import index_corpus
    from pipelines.golden import steps
    from pipelines.golden.params import load_golden_params
    from tests.unit.pipelines.golden.test_steps import CORPUS, DAY, SMALL

    shutil.copytree(CORPUS, tmp_path / "corpus")
    index_corpus(settings, tmp_path / "corpus")
    params = load_golden_params(settings, **SMALL)

    def build(on):
        plan = steps.plan_golden(on, params, logical_date=DAY)
        steps.generate_golden(on, params.name, plan.batches)
        return plan, steps.filter_golden(on, params)

    with running_simulator(SimulatorKnobs(capacity=8), prompts=all_prompts()) as url:
        online = on_simulator(settings, url, cache=False)
        _, full = build(online)
        spent = full.cost["total"]["prompt_tokens"] + full.cost["total"]["completion_tokens"]
        cap = spent // 3
        plan, capped = build(online.model_copy(update={"llm_budget_tokens": cap}))
    p = steps.paths(settings, params.name)
    failed = [row for start, _ in plan.batches for row in read_jsonl(p.failed_part(start))]
    budget = capped.cost["budget"]
    assert full.funnel["failed_generation_jobs"] == 0 and "budget" not in full.cost
    # Generation had half the cap in equal batch shares; the jobs it could not send are counted, not
    # dropped.
    assert budget["per_generation_batch"] == cap // 2 // len(plan.batches)
    assert budget["generation_jobs_skipped"] == sum(f["error"] == BUDGET_REASON for f in failed) > 0
    assert capped.funnel["failed_generation_jobs"] == len(failed)
    assert capped.funnel["generated"] < full.funnel["generated"]
    # The filters had what generation left: a candidate they could not check is rejected for the
    # budget, never kept.
    assert (
        budget["candidates_rejected"]
        == capped.funnel["rejected_by_reason"].get(BUDGET_REASON, 0)
        > 0
    )
    assert capped.funnel["kept"] <= capped.funnel["generated"] - budget["candidates_rejected"]
    tokens = capped.cost["total"]["prompt_tokens"] + capped.cost["total"]["completion_tokens"]
    assert (
        tokens <= cap + 8 * 2 * 2_000
    )  # in flight when a share ran out: up to 8 requests per endpoint

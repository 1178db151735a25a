"""The offline eval end to end: target, judge, results DB upserts, the gate, the push, HTTP
targets."""

import html
import json
import shutil
import threading
from collections import Counter
from contextlib import contextmanager
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from pipelines.core.handoff import IncompleteHandoff
from pipelines.core.records import GoldenItem
from pipelines.core.settings import Settings
from pipelines.core.workspace import RunPaths, Workspace
from pipelines.corpus.steps import index_corpus
from pipelines.evaluation.outputs.push import read_back
from pipelines.evaluation.runs.finalize import finalize_offline_eval
from pipelines.evaluation.runs.folder import judge_part
from pipelines.evaluation.runs.judge_batch import judge_offline_batch
from pipelines.evaluation.runs.offline import GateFailed, run_offline_eval
from pipelines.evaluation.runs.params import eval_params
from pipelines.evaluation.runs.prepare import prepare_offline_eval, stratified_subset
from pipelines.golden import steps
from pipelines.golden.dataset import load_golden_items, released_version
from pipelines.golden.params import load_golden_params
from pipelines.stores.results import ResultsStore
from tests.conftest import ROOT
from tests.support.simulated import on_simulator

# The plan raises the 3 tool triples asked for to what the gate's 10 pairs need (chunks lend several
# tools).
SMALL = {
    "seeds": 8,
    "questions_per_seed": 2,
    "multi_hop": 3,
    "adversarial": 2,
    "tool_triples": 3,
    "from_traces": 0,
    "batch_size": 8,
}
TOOL_METRICS = ("tool_selection_accuracy", "tool_call_accuracy")
FAST = {"metrics": ["faithfulness", "context_recall"], "batch_size": 10}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    home = tmp_path_factory.mktemp("eval")
    settings = Settings(home=home / "home", anonymizer_key="k")
    shutil.copytree(ROOT / "tests" / "data" / "corpus", home / "corpus")
    index_corpus(settings, home / "corpus")
    steps.build_golden(
        settings, load_golden_params(settings, **SMALL), logical_date=date(2026, 11, 30)
    )
    return settings


def runs_and_rows(settings, suite="offline"):
    store = ResultsStore.from_settings(settings)
    runs = store.runs(suite, 50, status=None)
    rows = {r.run_id: len(store.scores(r.run_id)) for r in runs}
    store.dispose()
    return runs, rows


def test_a_rerun_of_the_same_date_replaces_its_rows_and_the_gate_catches_a_regression(built):
    settings = built
    first, _ = run_offline_eval(
        settings, eval_params(settings, **FAST), logical_date=date(2026, 11, 2)
    )
    assert first.gate_passed is None and "no baseline" in first.gate
    overall = {row.metric: row for row in first.overall}
    assert overall["recall@5"].n > 0 and overall["faithfulness"].n > 0
    again, _ = run_offline_eval(
        settings, eval_params(settings, **FAST), logical_date=date(2026, 11, 2)
    )
    runs, rows = runs_and_rows(settings)
    assert first.run_id == again.run_id == "offline/2026-11-02/reference-rag"
    assert len(runs) == 1 and rows[first.run_id] > 0

    same, _ = run_offline_eval(
        settings, eval_params(settings, **FAST), logical_date=date(2026, 11, 9)
    )
    assert (
        same.gate_passed is True
        and same.baseline == first.run_id
        and "the reference is the baseline" in same.gate
    )
    # Answer correctness is a reported, gated 0/1 metric (tool items have tool metrics instead).
    assert {row.metric: row for row in same.overall}["answer_correctness"].n > 0
    assert "answer_correctness" in {row.metric for row in same.gate_rows}
    store = ResultsStore.from_settings(settings)
    graded = [s for s in store.scores(same.run_id) if s.metric == "answer_correctness"]
    store.dispose()
    assert graded and not [s for s in graded if s.stratum.startswith("tool/")]
    # The tool metrics are gated, paired over the tool items only; the reference agent calls every
    # tool right.
    gated = {row.metric: row for row in same.gate_rows}
    assert all(
        gated[m].passed and gated[m].gated and gated[m].n_pairs >= 10 for m in TOOL_METRICS
    ), gated
    assert all(overall[m].mean == 1.0 for m in TOOL_METRICS)
    assert gated["tool_call_accuracy"].n_pairs == overall["tool_call_accuracy"].n
    store = ResultsStore.from_settings(settings)
    tool_scores = [s for s in store.scores(same.run_id) if s.metric in TOOL_METRICS]
    store.dispose()
    assert tool_scores and all(s.stratum.startswith("tool/") for s in tool_scores)

    # A new release of the service behind the same target name retrieves nothing relevant.
    with serving(200) as url:
        degraded = eval_params(
            settings, **FAST, target_url=url, target_name="reference-rag", fail_on_gate=True
        )
        with pytest.raises(GateFailed, match="recall@5"):
            run_offline_eval(settings, degraded, logical_date=date(2026, 11, 16))
    runs, _ = runs_and_rows(settings)
    assert [r.gate_passed for r in sorted(runs, key=lambda r: r.logical_date)] == [
        None,
        True,
        False,
    ]
    # Gated against the previous run and against the reference, the first accepted run of the golden
    # version.
    degraded_run = next(r for r in runs if r.logical_date == date(2026, 11, 16))
    assert [(c["role"], c["run_id"], c["passed"]) for c in degraded_run.gate["comparisons"]] == [
        ("baseline", same.run_id, False),
        ("reference", first.run_id, False),
    ]
    # Its agent searches the docs with the whole question for every request: every tool call differs
    # from the expected one and fails the gate; the wrong tool choices (TSA 1 -> 0.25) are not
    # caught at this n.
    verdicts = {m["metric"]: m for m in max(runs, key=lambda r: r.logical_date).gate["metrics"]}
    assert (
        verdicts["tool_call_accuracy"]["candidate_mean"] == 0.0
        and not verdicts["tool_call_accuracy"]["passed"]
    )
    assert verdicts["tool_selection_accuracy"]["candidate_mean"] < 1.0
    workspace = Workspace.from_settings(settings)
    report = workspace.report("offline", date(2026, 11, 16), "reference-rag")
    html = report.read_text(encoding="utf-8")
    assert (
        "recall@5" in html
        and f"Against the baseline {same.run_id}" in html
        and f"Against the reference {first.run_id}" in html
    )
    metrics_json = json.loads(workspace.metrics_json(report).read_text())
    assert "all" in metrics_json["recall@5"]


def test_the_push_reaches_a_real_pushgateway_and_reads_back(built, pushgateway):
    settings = built.model_copy(update={"pushgateway_url": pushgateway.url})
    _, pushed = run_offline_eval(
        settings, eval_params(settings, **FAST), logical_date=date(2026, 11, 23)
    )
    assert pushed.mode == "pushgateway" and pushed.samples > 0
    groups = read_back(pushgateway.url)
    # One group per suite and target, never a run id (the Pushgateway never forgets a group).
    group = next(
        g
        for g in groups
        if g["labels"] == {"job": "ragwatch", "suite": "offline", "target": "reference-rag"}
    )
    recall = group["metrics"]["rag_recall_at_5_score"]
    assert any(s["labels"]["stratum"] == "all" for s in recall)
    # The run's model usage too, per stage and metric: the target's answers and the judge's
    # requests.
    requests = {
        (s["labels"]["stage"], s["labels"]["metric"]): s["value"]
        for s in group["metrics"]["rag_eval_llm_requests"]
    }
    assert requests[("target", "answer")] > 0 and requests[("judge", "answer_correctness")] > 0
    # A backfilled past date must not overwrite the newest run's gauges.
    _, past = run_offline_eval(
        settings, eval_params(settings, **FAST), logical_date=date(2026, 10, 26)
    )
    assert past.destination is None and "newer" in past.skipped


def test_an_offline_run_on_the_simulator_records_what_the_server_saw_and_a_cached_rerun_nothing(
    built,
):

    from pipelines.cli.prompt_catalog import all_prompts
    from pipelines.evaluation.runs.cost import read_usage
    from pipelines.evaluation.runs.estimate import estimate_offline
    from pipelines.models.simulator import SimulatorKnobs, running_simulator, served_stats

    with running_simulator(SimulatorKnobs(capacity=8), prompts=all_prompts()) as url:
        settings = on_simulator(built, url)
        stats = lambda: served_stats(url)  # noqa: E731
        params = eval_params(settings, **{**FAST, "limit": 6, "batch_size": 3})
        summary, _ = run_offline_eval(settings, params, logical_date=date(2026, 11, 16))
        served = stats()
        cost = summary.cost
        assert (
            cost.total("requests") == served["requests"] > 0 and cost.by_model() == served["models"]
        )
        assert {"target", "judge"} <= set(cost.by_stage()) and cost.items == summary.items == 6
        assert (
            cost.total("prompt_tokens") == served["prompt_tokens"] and cost.total("llm_seconds") > 0
        )
        run = RunPaths(
            Workspace.from_settings(settings)
            .run_folder("offline", date(2026, 11, 16), "reference-rag")
            .root
        )
        assert {p.name for p in run.usage_files} == {
            "usage-prepare.json",
            f"usage-{judge_part(0)}.json",
            f"usage-{judge_part(3)}.json",
        }
        assert sum(r.requests for p in run.usage_files for r in read_usage(p)) == served["requests"]
        # A dry run of next week: the same items, every call of which the cache now holds (nothing
        # sent).
        later = estimate_offline(settings, params, logical_date=date(2026, 11, 23))
        assert later.history[0] == summary.run_id and later.cached_units == later.units == {
            "items": 6
        }
        assert later.total("requests") == 0 and stats()["requests"] == served["requests"]
        # (Other simulator runs of this module, when they ran first, share the rates: about the same
        # per item.)
        assert later.total("cache_hits") == pytest.approx(
            cost.total("requests") + cost.total("cache_hits"), rel=0.2
        )
        again, _ = run_offline_eval(settings, params, logical_date=date(2026, 11, 16))
        assert stats()["requests"] == served["requests"] and again.cost.total("requests") == 0
        assert again.cost.total("cache_hits") == cost.total("requests") + cost.total("cache_hits")


def test_an_offline_run_over_its_token_budget_skips_the_rest_for_budget_and_scores_retrieval_anyway(
    built,
):
    from pipelines.cli.prompt_catalog import all_prompts
    from pipelines.models.budget import BUDGET_REASON
    from pipelines.models.simulator import SimulatorKnobs, running_simulator, served_stats

    with running_simulator(SimulatorKnobs(capacity=8), prompts=all_prompts()) as url:
        settings = on_simulator(built, url, cache=False)
        # One request in flight per endpoint: a step overshoots its share by two requests at most.
        settings = settings.model_copy(
            update={
                role: getattr(settings, role).model_copy(update={"max_concurrency": 1})
                for role in ("generator", "judge")
            }
        )
        params = eval_params(settings, **{**FAST, "limit": 12, "batch_size": 6})
        full, _ = run_offline_eval(settings, params, logical_date=date(2026, 11, 2))
        spent = full.cost.total("prompt_tokens") + full.cost.total("completion_tokens")
        capped = settings.model_copy(update={"llm_budget_tokens": spent // 2})
        summary, _ = run_offline_eval(capped, params, logical_date=date(2026, 11, 9))
        served = served_stats(url)
        # A budget of one token: the system under test's first answer is sent, then nothing.
        starved, _ = run_offline_eval(
            settings.model_copy(update={"llm_budget_tokens": 1}),
            params,
            logical_date=date(2026, 10, 26),
        )
        sent = served_stats(url)["requests"] - served["requests"]
        assert sent == 1 == starved.cost.total("requests")
    tokens = summary.cost.total("prompt_tokens") + summary.cost.total("completion_tokens")
    budget = summary.cost.budget
    assert served["prompt_tokens"] + served["completion_tokens"] == spent + tokens
    assert (
        budget.cap == spent // 2
        and 0 < budget.prepare_tokens
        and tokens <= budget.cap + 3 * 2 * 2_000
    )
    assert budget.per_batch == (budget.cap - budget.prepare_tokens) // 2
    store = ResultsStore.from_settings(built)
    scores, before = store.scores(summary.run_id), store.scores(full.run_id)
    store.dispose()
    assert {(s.item_id, s.metric) for s in scores} == {
        (s.item_id, s.metric) for s in before
    }  # none dropped
    skipped = [s for s in scores if s.error == BUDGET_REASON]
    assert (
        skipped
        and all(s.status == "skipped" for s in skipped)
        and summary.cost.skipped_for_budget == len(skipped)
    )
    assert not [s for s in scores if s.status == "failed"]
    # Retrieval costs no model request: it is scored whether or not the answer was sent.
    retrieval = {"mrr", *(f"{name}@{k}" for name in ("recall", "precision") for k in (1, 3, 5, 10))}
    assert all(s.status == "ok" for s in scores if s.metric in retrieval)
    store = ResultsStore.from_settings(built)
    starved_scores = store.scores(starved.run_id)
    store.dispose()
    assert starved.cost.budget.per_batch == 0 and {s.metric for s in starved_scores} >= retrieval
    assert all(s.status == "ok" for s in starved_scores if s.metric in retrieval)
    # Everything else waited on a request: skipped for the budget, but for the one item that got its
    # answer.
    others = [s for s in starved_scores if s.metric not in retrieval]
    assert {s.error for s in others if s.status != "ok"} == {BUDGET_REASON}
    assert (
        not any(s.status == "failed" for s in others)
        and starved.cost.skipped_for_budget > len(others) / 2
    )
    assert len({s.item_id for s in others if s.status == "ok"}) <= 1


class _Service(BaseHTTPRequestHandler):
    status = 200

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.status != 200:
            self.send_response(self.status)
            self.end_headers()
            self.wfile.write(b"overloaded")
            return
        # Its 2 best passages, like a service with a similarity cut-off: measured at every k all the
        # same.
        contexts = [
            {"chunk_id": f"nope#x/{n}-00000000", "text": body["question"], "score": 1.0 - n / 10}
            for n in range(2)
        ]
        reply = {
            "answer": f"Echo: {body['question']}",
            "contexts": contexts,
            "tool_calls": [{"name": "vector_search", "arguments": {"query": body["question"]}}],
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@contextmanager
def serving(status: int):
    """A team's RAG service on loopback: echoes the question, cites a chunk id that is never
    gold."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (_Service,), {"status": status}))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/rag"
    finally:
        server.shutdown()


@pytest.mark.parametrize("status", [200, 503])
def test_an_http_target_follows_the_contract_and_its_failures_fail_the_metrics(built, status):
    with serving(status) as url:
        params = eval_params(built, **FAST, target_url=url, target_name=f"svc-{status}")
        summary, _ = run_offline_eval(built, params, logical_date=date(2026, 11, 30))
    store = ResultsStore.from_settings(built)
    scores = store.scores(summary.run_id)
    store.dispose()
    recall = [s for s in scores if s.metric == "recall@5"]
    if status == 200:
        assert recall and all(
            s.status == "ok" and s.value == 0.0 for s in recall
        )  # its chunk ids are not gold
        # 2 passages, never "not measured at k": every k of every retrieval item is an ok score (a
        # rerun pairs).
        at_k = [s for s in scores if s.metric.startswith(("recall@", "precision@"))]
        per_metric = {m: sum(s.metric == m for s in at_k) for m in {s.metric for s in at_k}}
        assert {"recall@10", "precision@10"} <= set(per_metric) and set(per_metric.values()) == {
            len(recall)
        }
        assert all(s.status == "ok" for s in at_k)
    else:
        assert scores and all(s.value is None for s in scores if s.status != "ok")
        failed = [s for s in scores if s.status == "failed"]
        assert failed and all("HTTP 503" in s.error for s in failed)
        assert not [s for s in scores if s.status == "ok" and s.metric != "tool_call_accuracy"]


def _items(counts: dict[str, int]) -> list[GoldenItem]:
    return [
        GoldenItem(
            item_id=f"{qtype}-{n}",
            question=f"q {qtype} {n}",
            reference_answer="a",
            qtype=qtype,
            language="en",
            source="corpus",
            source_ref=f"{qtype}/{n}",
            generator_model="m",
            corpus_version="c",
            created_at="2026-11-30",
        )
        for qtype, n_items in counts.items()
        for n in range(n_items)
    ]


def test_a_limit_draws_a_stratified_nested_subset_with_a_floor_per_question_type():
    # The reported case: 165 items, 12 of them tool triples; a first-n by hash drew 3 tool items of
    # 60.
    items = _items({"single_hop": 105, "multi_hop": 24, "adversarial": 24, "tool": 12})
    chosen, subset = stratified_subset(items, 60, floor=10)
    counts = Counter(i.qtype for i in chosen)
    assert len(chosen) == 60 and counts == subset.drawn and subset.available["tool"] == 12
    assert min(counts.values()) >= 10 and counts["single_hop"] == max(counts.values())
    assert "tool 10/12" in subset.line() and "60 of 165" in subset.line()
    # Deterministic, hash order within a type, and a larger limit draws a superset of a smaller one.
    assert stratified_subset(list(reversed(items)), 60, floor=10)[0] == chosen
    previous: set[str] = set()
    for limit in range(1, len(items) + 5):
        ids = {i.item_id for i in stratified_subset(items, limit, floor=10)[0]}
        assert len(ids) == min(limit, len(items)) and previous <= ids
        previous = ids
    # Without a floor the draw is proportional; floors compete in proportion when the limit is below
    # their sum.
    assert stratified_subset(items, 33, floor=0)[1].drawn == {
        "adversarial": 5,
        "multi_hop": 5,
        "single_hop": 21,
        "tool": 2,
    }
    assert stratified_subset(items, 8, floor=10)[1].drawn == {
        "adversarial": 2,
        "multi_hop": 2,
        "single_hop": 2,
        "tool": 2,
    }
    assert stratified_subset(_items({"single_hop": 30, "tool": 3}), 20, floor=10)[1].drawn == {
        "single_hop": 17,
        "tool": 3,
    }


def test_a_limited_run_evaluates_the_stratified_subset_and_says_how_it_was_drawn(built):
    params = eval_params(built, **FAST, limit=12, target_name="limited")
    summary, _ = run_offline_eval(built, params, logical_date=date(2026, 11, 30))
    store = ResultsStore.from_settings(built)
    run = store.get_run(summary.run_id)
    scored = {s.item_id for s in store.scores(summary.run_id)}
    store.dispose()
    test_split = [
        i
        for i in load_golden_items(
            built, params.golden_name, released_version(built, params.golden_name)
        )
        if i.split == "test"
    ]
    chosen, subset = stratified_subset(test_split, 12, floor=built.gate_min_pairs)
    assert summary.items == 12 and scored == {i.item_id for i in chosen}
    assert (
        run.params["subset"] == subset.model_dump() and min(subset.drawn.values()) >= 2
    )  # every type, not 3 of 4
    report = html.unescape(Path(run.report_path).read_text(encoding="utf-8"))
    assert f'"drawn": {json.dumps(subset.drawn, sort_keys=True)}' in report


def test_eval_compare_reports_paired_differences_per_metric_and_stratum(built):
    from pipelines.evaluation.runs.compare import compare, parse_config

    assert parse_config("k=3,mode=dense") == {"retrieval_k": 3, "retrieval_mode": "dense"}
    with pytest.raises(ValueError, match="use k=N"):
        parse_config("chunks=512")
    base = eval_params(built, **FAST)
    rows = compare(
        built, base, "k=5,mode=hybrid", "k=1,mode=hybrid", logical_date=date(2026, 11, 30)
    )
    recall = next(r for r in rows if r["metric"] == "recall@5" and r["stratum"] == "all")
    assert recall["n_pairs"] > 0 and recall["diff"] == pytest.approx(recall["b"] - recall["a"])
    assert recall["diff"] <= 0 and recall["ci_low"] <= recall["diff"] <= recall["ci_high"]
    assert any(r["stratum"] != "all" for r in rows)


def test_a_lost_score_file_fails_finalize_naming_its_batch(built):
    params = eval_params(built, **{**FAST, "batch_size": 5}, limit=10, target_name="handoff")
    prepared = prepare_offline_eval(built, params, logical_date=date(2026, 11, 30))
    assert prepared.batches == [(0, 5), (5, 10)]
    for start, end in prepared.batches:
        judge_offline_batch(built, prepared.run_dir, start, end)
    run = RunPaths(prepared.run_dir)
    run.scores(judge_part(5)).unlink()
    run.scores("retrieval-tools").unlink()
    with pytest.raises(IncompleteHandoff) as raised:
        finalize_offline_eval(built, prepared.run_dir)
    message = str(raised.value)
    assert (
        "0 of the 3 planned parts" not in message
        and "1 of the 3 planned parts are there" in message
    )
    assert f"batch 5-9 (map index 1) (scores-{judge_part(5)}.jsonl)" in message
    assert (
        "the prepare step's retrieval-tools scores" in message
        and "rerun the offline_eval `judge` task" in message
    )
    store = ResultsStore.from_settings(built)
    store.create()
    stored = store.runs("offline", 50, status=None)
    store.dispose()
    assert "handoff" not in {r.target for r in stored}  # nothing stored from the smaller set


def test_the_judge_retest_leaves_the_scores_and_the_gate_as_they_were(built):
    """The same candidate gated against the same baseline, without and then with every item judged
    twice: the scores in the results DB and every figure of the gate are the same; the retest shows
    only as judge noise."""

    def params(share: float):
        return eval_params(built, **FAST, target_name="retest-gate", judge_retest_share=share)

    baseline, _ = run_offline_eval(built, params(0.0), logical_date=date(2026, 12, 7))
    plain, _ = run_offline_eval(built, params(0.0), logical_date=date(2026, 12, 14))
    store = ResultsStore.from_settings(built)
    plain_scores = sorted(
        (s.item_id, s.metric, s.status, s.value) for s in store.scores(plain.run_id)
    )
    store.dispose()
    retested, _ = run_offline_eval(built, params(1.0), logical_date=date(2026, 12, 14))
    store = ResultsStore.from_settings(built)
    retested_scores = sorted(
        (s.item_id, s.metric, s.status, s.value) for s in store.scores(retested.run_id)
    )
    store.dispose()
    assert plain.baseline == retested.baseline == baseline.run_id and plain.gate_passed is True
    assert any(
        row.gated for row in plain.gate_rows
    )  # enough pairs for the gate to decide, so a change would show
    assert retested_scores == plain_scores and retested.overall == plain.overall
    assert [r.model_dump() for r in retested.gate_rows] == [r.model_dump() for r in plain.gate_rows]
    assert plain.judge_noise == [] and {r.metric for r in retested.judge_noise} == set(
        FAST["metrics"]
    )
    # The offline backend is deterministic: its retest agrees with the first judgement on every
    # item.
    assert all(r.enough and r.mean_abs_difference == 0 for r in retested.judge_noise)
    assert retested.cost.by_stage()["judge_retest"]["requests"] > 0
